"""English stop words: function words (articles, pronouns, auxiliaries, prepositions, conjunctions).

The set follows the usual English function-word lists of information retrieval (the Snowball
English list and its derivatives), written out here, in lower case, apostrophes as U+0027.
Content words that merely occur often ("said", "new") are not in it.
"""

from __future__ import annotations

__all__ = ["ENGLISH_STOPWORDS"]

_PRONOUNS = """
i me my myself we us our ours ourselves you your yours yourself yourselves he him his himself
she her hers herself it its itself they them their theirs themselves what which who whom whose
this that these those
"""

_AUXILIARIES = """
am is are was were be been being have has had having do does did doing will would shall should
can could may might must ought
"""

_CONTRACTIONS = """
i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd
they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't
doesn't don't didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's
who's what's here's there's when's where's why's how's
"""

_PARTICLES = """
a an the and but if or because as until while of at by for with about against between into
through during before after above below to from up down in out on off over under again further
then once here there when where why how all any both each few more most other some such no nor
not only own same so than too very just
"""

ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    (_PRONOUNS + _AUXILIARIES + _CONTRACTIONS + _PARTICLES).split()
)
