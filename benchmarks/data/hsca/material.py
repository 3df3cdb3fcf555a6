"""The hand-written text of the HSCA evaluation cases (written for redmem, not taken from a corpus).

``build_cases.py`` composes these into the frozen JSON case files; the evaluations read only
the JSON. Changing a line here and rebuilding changes the content hash, which the evaluation
script refuses to run against until the hash it records is updated on purpose.

- ``THREADS``: per domain, four conversational threads of four short turns sharing their
  vocabulary (the "central" material: each turn alone is short, together they are dense).
- ``ASIDES``: per domain, one long tangent (a single turn of six or more sentences).
- ``CROSS``: turns joining two unrelated domains in one breath.
- ``BRIDGES``: pairs of concepts in different framings related by meaning (eval 5), each side
  two turns, with the human-labelled bridge domain.
- ``FILLERS``: clauses with one slot for a keyword, each used once (eval 4's shallow documents).
"""

from __future__ import annotations

THREADS: dict[str, list[list[str]]] = {
    "medical": [
        ["The patient came in with a high fever and a cough.",
         "Her fever rose again overnight, so the doctor ordered blood tests.",
         "The blood tests showed an infection, and the doctor started antibiotics.",
         "After two days of antibiotics the fever broke and the cough eased."],
        ["My father's doctor changed his blood pressure medication last week.",
         "The new medication lowers his blood pressure but makes him dizzy in the morning.",
         "The doctor said the dizziness usually fades once the dose settles.",
         "If the dizziness stays, the doctor will lower the dose of the medication."],
        ["The nurse explained how the vaccine trains the immune system.",
         "A second vaccine dose a month later makes the immune response stronger.",
         "Some patients feel a mild fever after the second dose of the vaccine.",
         "The nurse said the fever after the vaccine is the immune system at work."],
        ["The surgeon walked us through the knee surgery before the operation.",
         "Recovery from knee surgery means weeks of therapy and some pain.",
         "The therapy starts the day after surgery to keep the knee moving.",
         "The surgeon prescribed pain medication for the first week of therapy."],
    ],
    "legal": [
        ["The landlord says the lease lets him raise the rent mid-year.",
         "I read the lease twice and found no clause about raising the rent.",
         "A lawyer told me a rent increase needs a clause in the lease.",
         "Without that clause the landlord cannot raise the rent until the lease ends."],
        ["The contract requires the supplier to deliver within thirty days.",
         "The supplier missed the delivery date, which is a breach of the contract.",
         "Our attorney says the breach lets us claim damages under the contract.",
         "The attorney will send the supplier a formal notice of breach first."],
        ["The court dismissed the lawsuit because it was filed too late.",
         "The statute gives plaintiffs two years to file a lawsuit of this kind.",
         "The plaintiff argued the statute period started when she found the harm.",
         "The court held that the statute period started at the injury itself."],
        ["The jury found the defendant liable for the accident.",
         "The judge told the jury to weigh the defendant's own testimony carefully.",
         "The defendant's attorney plans to appeal the jury verdict.",
         "An appeal court reviews the judge's rulings, not the jury's view of the facts."],
    ],
    "physics": [
        ["A ball dropped from a tower speeds up because gravity pulls it down.",
         "Without air resistance, gravity gives every falling object the same acceleration.",
         "A feather falls slowly only because air resistance is large for its mass.",
         "In a vacuum the feather and the ball land together, pulled by the same gravity."],
        ["Friction between the tyres and the road lets a car stop.",
         "On ice the friction drops, so the car keeps its momentum longer.",
         "More momentum means the brakes need more distance to stop the car.",
         "That is why stopping distance grows with speed: momentum against friction."],
        ["Light behaves as a wave when it passes through two narrow slits.",
         "The two waves of light interfere and paint bright and dark bands.",
         "Yet each photon of light lands on the screen at a single point.",
         "The bands appear only after many photons, which is the quantum puzzle of light."],
        ["Entropy in a closed system never goes down, says thermodynamics.",
         "Heat flows from the hot cup to the cold room because entropy grows that way.",
         "A fridge lowers entropy inside it only by raising entropy outside with energy.",
         "So thermodynamics lets the fridge work, but the energy bill pays for the entropy."],
    ],
    "mathematics": [
        ["A prime number has exactly two divisors, one and itself.",
         "Euclid's proof shows there is no largest prime number.",
         "The proof multiplies all the primes, adds one, and finds a new prime factor.",
         "So every finite list of prime numbers misses at least one prime."],
        ["The derivative of a function measures how fast the function changes.",
         "For a polynomial function, the derivative lowers each power by one.",
         "Setting the derivative to zero finds where the function stops rising.",
         "Those zero points of the derivative are where the function peaks or dips."],
        ["A matrix multiplies a vector and returns another vector.",
         "Some special vectors only stretch when the matrix acts on them.",
         "Those vectors are the eigenvectors of the matrix, and the stretch is the eigenvalue.",
         "Knowing the eigenvectors of a matrix makes its powers easy to compute."],
        ["The probability of two independent events is the product of their probabilities.",
         "Rolling two sixes has probability one sixth times one sixth.",
         "The events must be independent, or the product rule for probability fails.",
         "For dependent events the probability needs the conditional formula instead."],
    ],
    "technical_prose": [
        ["Our API server times out when the database query runs slow.",
         "The slow query scans the whole table because the index is missing.",
         "Adding an index on the user column made the query fast again.",
         "With the index in place the API server stopped timing out."],
        ["We cache session data in Redis to cut database load.",
         "Each cache entry expires after ten minutes so the cache stays small.",
         "When the cache misses, the server reads the database and refills the cache.",
         "The cache hit rate is ninety percent, so the database load fell sharply."],
        ["The deployment pipeline builds a container image for every release.",
         "The pipeline runs the tests inside the container before the release goes out.",
         "A failed test stops the pipeline, and the release waits for a fix.",
         "Green pipelines push the container to the cluster in about five minutes."],
        ["The memory usage of the python worker grows after every request.",
         "A profiler showed the worker keeps every request object in a global list.",
         "Clearing that list after each request keeps the worker memory flat.",
         "After the fix, worker memory stayed under two hundred megabytes for days."],
    ],
    "narrative": [
        ["Once upon a time a young fox lived at the edge of a dark forest.",
         "Every night the fox crept out of the forest to watch the village lights.",
         "One winter the fox followed a lantern into the village and got lost.",
         "A kind girl found the fox shivering and carried it back to the forest."],
        ["The old king had three daughters and one enchanted ring.",
         "He promised the ring to the daughter who brought him the rarest gift.",
         "The youngest daughter brought the king a handful of salt.",
         "The king laughed at the salt until his cooks served him a meal without it."],
        ["In the story, a dragon guarded a castle on a mountain.",
         "A shepherd boy climbed the mountain to find his lost sheep near the castle.",
         "The dragon caught the boy but was charmed by his shepherd songs.",
         "The boy and the dragon became friends, and the castle became his home."],
        ["Our hero set out on a journey to find her missing brother.",
         "On the journey she crossed a river on the back of a giant turtle.",
         "The turtle told her that her brother had passed that way a year before.",
         "At the end of the journey she found her brother running an inn by the sea."],
    ],
    "philosophical": [
        ["Socrates claimed that an unexamined life is not worth living.",
         "For him, examining life meant questioning what we think we know.",
         "Questioning our knowledge shows how little of it we truly possess.",
         "That humility about knowledge was, for Socrates, the start of wisdom."],
        ["Is it moral to lie to protect a friend from harm?",
         "Kant says lying is always wrong, whatever the harm it prevents.",
         "Others argue the moral weight of the harm can outweigh the lie.",
         "The question pits duty against consequences in moral philosophy."],
        ["Free will seems obvious when I choose tea over coffee.",
         "But if every choice has causes, maybe free will is an illusion.",
         "Compatibilists say free will only needs the choice to come from my own reasons.",
         "On that view my reasons make the choice free, even if they have causes."],
        ["What makes a person the same person over a lifetime?",
         "Locke tied personal identity to memory and consciousness.",
         "If memory makes the person, losing memory would make a new person.",
         "Many find that consequence strange, which keeps the identity question open."],
    ],
    "historical": [
        ["The Roman empire split into a western and an eastern half.",
         "The western empire fell in the fifth century under pressure from invasions.",
         "The eastern empire lasted another thousand years from Constantinople.",
         "Historians still debate why the west fell while the eastern empire endured."],
        ["The printing press reached Europe in the fifteenth century.",
         "Within decades, printed books spread ideas faster than any scribe.",
         "The press carried the Reformation's pamphlets across the kingdoms.",
         "Historians call the press one of the engines of the modern era."],
        ["The war between the two kingdoms lasted over a century.",
         "The war was not continuous but a series of campaigns and truces.",
         "Longbows won famous battles early in the war for the smaller kingdom.",
         "In the end the larger kingdom won the war and drove out the invaders."],
        ["The colonial era ended for many countries after the second world war.",
         "Independence movements grew strong as the old empires weakened.",
         "Some colonies won independence by treaty, others by a long war.",
         "The archive records show how quickly the colonial empires came apart."],
    ],
    "poetry": [
        ["The poem opens with the moon rising over a silent harbour.",
         "Each stanza of the poem returns to the moon as a tender witness.",
         "The rhyme softens in the last stanza, as if the moon were whispering.",
         "The poem ends with dawn swallowing the moon and the harbour waking."],
        ["I am writing a sonnet about my grandmother's garden.",
         "The sonnet's first lines compare her roses to a lyric sung at dusk.",
         "The sonnet turns at the ninth line, when the garden goes quiet.",
         "I want the last couplet of the sonnet to bloom like her roses."],
        ["Haiku need seventeen syllables and a turn of season.",
         "My haiku about falling petals keeps running one syllable long.",
         "Cutting the word 'softly' fixes the syllable count of the haiku.",
         "Now the haiku ends with petals on water, which is the image I wanted."],
        ["The verse sings of sorrow without ever naming it.",
         "Every line of the verse leans on the image of an empty chair.",
         "The sorrow of the verse lives in that chair and the dusk around it.",
         "Readers feel the sorrow because the verse refuses to explain it."],
    ],
}

#: One long tangent per domain: many sentences, little of the conversation's vocabulary.
ASIDES: dict[str, str] = {
    "medical": (
        "By the way, my aunt was a nurse in a rural hospital for thirty years. She used to say that the night "
        "shifts were the loneliest hours she ever worked. Once a farmer arrived with a broken arm after a "
        "tractor accident and insisted on finishing his coffee first. The hospital had one doctor for three "
        "villages back then. She learned to set bones, deliver babies and calm drunk visitors in the same week. "
        "When she retired, the patients she had treated filled the little church for her farewell."),
    "legal": (
        "Completely unrelated, but my neighbour just finished jury duty on a long fraud trial. He said the "
        "courtroom was freezing and the lawyers spoke in a language he barely understood. The judge kept "
        "reminding everyone to avoid the news. Lunch was always the same dry sandwich from the court canteen. "
        "He admitted he nearly fell asleep during the accountant's testimony about invoices. In the end the "
        "jury reached a verdict after two days, and he was relieved to go back to work."),
    "physics": (
        "Side note: I finally visited the science museum with my nephew last Saturday. He spent an hour at the "
        "pendulum exhibit watching the floor pins fall one by one. There was a room where you could feel "
        "static electricity lift your hair. The planetarium show explained black holes with very dramatic "
        "music. My nephew asked whether light gets tired on its way from distant stars. I had no good answer, "
        "so we bought a book about the universe in the gift shop."),
    "mathematics": (
        "Funny thing, my daughter's school held a maths competition this week. The hardest puzzle asked how "
        "many ways a knight can tour a small chessboard. Her team tried drawing every path on paper and ran "
        "out of pencils. A teacher brought in old calculators that nobody knew how to use. The winning team "
        "solved the puzzle by spotting a pattern in the corners. My daughter came home convinced she wants to "
        "study geometry when she grows up."),
    "technical_prose": (
        "Unrelated, but I spent the whole weekend rebuilding my home network. The old router kept dropping the "
        "connection whenever the microwave ran. I bought a new router, flashed custom firmware on it, and broke "
        "the printer's wireless setup in the process. Then the smart lights forgot their configuration and "
        "blinked all night. My partner was not impressed by my explanations about channels and bands. By "
        "Sunday evening everything worked, except the doorbell camera."),
    "narrative": (
        "That reminds me of a story my grandfather told about his years as a sailor. His ship once lost its "
        "way in a storm near a rocky island. The crew rowed ashore and found a lighthouse keeper who had not "
        "seen visitors in a year. The keeper fed them soup and told them tales of ghost ships. They stayed for "
        "three nights until the sea calmed. My grandfather always ended the story by saying the keeper never "
        "once asked their names."),
    "philosophical": (
        "This makes me think of a late conversation I had at a friend's wedding. A stranger at our table "
        "asked whether we would trade our memories for eternal happiness. Someone said happiness without "
        "memory would belong to nobody. Another guest argued that most memories are painful anyway. The debate "
        "went on until the band started playing. I still wonder what I would answer if the offer were real."),
    "historical": (
        "On a different note, I just came back from a trip to an old castle town. The guide told us the walls "
        "were built in the twelfth century to keep out raiders from the north. We walked through a museum of "
        "armour, coins and faded tapestries. In the square there was a statue of a queen who had ruled for "
        "forty years. The tavern claimed to be the oldest in the country and served a very old recipe for "
        "stew. I bought a map of the region as it looked before the borders moved."),
    "poetry": (
        "Random thought, but I joined a poetry reading at a small bookshop on Friday. A retired teacher read "
        "verses about the sea that made half the room cry. A teenager performed a loud, angry piece about "
        "buses. The owner served cheap wine in paper cups and apologised for the folding chairs. I was too shy "
        "to read my own lines. Walking home, I kept repeating a phrase about lanterns from one of the poems."),
}

#: Turns joining two unrelated domains (eval 2's cross-domain segment), keyed "a+b" (sorted).
CROSS: dict[str, list[str]] = {
    "legal+medical": [
        "The hospital's lawyer says the patient consent form may not survive a lawsuit.",
        "If the court finds the consent invalid, the doctor could be liable for the surgery.",
    ],
    "legal+physics": [
        "The court called a physicist to explain the force of the collision to the jury.",
        "Her testimony on momentum and friction decided which driver was liable under the law.",
    ],
    "mathematics+medical": [
        "The trial's statistician computed the probability that the drug's effect was chance.",
        "That probability decides whether doctors can prescribe the drug to patients.",
    ],
    "narrative+technical_prose": [
        "I am writing a story where the hero is a database server that dreams of a castle.",
        "In the story, every cache miss sends the server on a journey through the forest.",
    ],
    "philosophical+physics": [
        "If quantum events are random, does that leave room for free will?",
        "Some philosophers say randomness in physics gives chance, not a free mind.",
    ],
    "historical+mathematics": [
        "Ancient empires needed geometry to measure fields after every flood.",
        "Historians trace the first proofs to scribes who taxed the land of the kingdom.",
    ],
    "legal+technical_prose": [
        "Our contract with the cloud provider makes them liable if the database loses data.",
        "The lawyer wants the server logs as evidence of the breach of contract.",
    ],
    "medical+poetry": [
        "The poem I am writing follows my mother's months of cancer treatment.",
        "Each stanza is one hospital visit, and the moon in the last verse is her recovery.",
    ],
    "philosophical+technical_prose": [
        "Can software have a mind, or does the system only process symbols?",
        "The question of machine consciousness turns a code review into a debate on knowledge.",
    ],
    "historical+medical": [
        "Historians say the plague changed the empire more than any war of that century.",
        "Doctors of that era had no treatment for the infection, so whole cities emptied.",
    ],
    "mathematics+poetry": [
        "The poem counts its syllables by the Fibonacci numbers, one, one, two, three, five.",
        "Each stanza grows like the sequence, so the verse follows a formula.",
    ],
    "legal+philosophical": [
        "Is a law just if it is obeyed only out of fear of the court?",
        "Philosophers of justice ask whether legal rights rest on moral reasons or on power.",
    ],
    "narrative+physics": [
        "In my story the hero falls into a black hole and time slows for her.",
        "Gravity stretches the chapter so her journey lasts a second for her and a century at home.",
    ],
    "historical+technical_prose": [
        "We are building a database of the kingdom's medieval archive records.",
        "The query index lets historians search a century of treaties by name.",
    ],
    "medical+physics": [
        "An MRI scanner uses a strong magnetic field to image the patient's body.",
        "The physics of the magnetic field lets the doctor see a tumour without surgery.",
    ],
}

#: (domain x, side a turns, domain y, side b turns, bridge domain): related by meaning, not words.
BRIDGES: list[tuple[str, list[str], str, list[str], str]] = [
    ("narrative", ["A rabbit in our garden dashed across the lawn every morning.",
                   "It was so quick that it would stop and nap under the hedge, sure nobody could catch it."],
     "philosophical", ["Aesop's tortoise kept a slow steady pace while the hare slept.",
                       "The fable teaches that persistence beats arrogant talent."], "narrative"),
    ("medical", ["My grandfather's heart surgery went well, but he must rest for months.",
                 "The cardiologist says he should walk a little every day to rebuild strength."],
     "philosophical", ["Stoics taught that we should accept what we cannot change.",
                       "Endurance of hardship with a calm mind was their idea of virtue."], "philosophical"),
    ("technical_prose", ["Our service kept crashing because one slow component blocked all the others.",
                         "We split the work into queues so one stuck job no longer stalls everything."],
     "historical", ["Early factories halted when one machine on the line broke down.",
                    "Managers then introduced buffers of parts between the stations."], "technical_prose"),
    ("physics", ["A pendulum swings back and forth with a steady period.",
                 "Its period depends on the length of the string, not on how far it swings."],
     "poetry", ["The verse rocks like a cradle, back and forth in the night.",
                "Each line returns to where the last one began, a lullaby of motion."], "physics"),
    ("legal", ["The tenant signed an agreement promising to pay rent each month.",
               "Breaking that promise lets the landlord go to court."],
     "philosophical", ["Keeping promises is the foundation of trust between people.",
                       "Thinkers from Hume to Rawls asked why a promise binds us at all."], "legal"),
    ("historical", ["The empire built roads to move its armies to every frontier.",
                    "Those roads later carried merchants, letters and new religions."],
     "technical_prose", ["The internet began as a military network to survive attacks.",
                         "Its protocols later carried email, shops and social networks."], "historical"),
    ("narrative", ["In the tale, the boy cried wolf so often that no one came when the wolf appeared.",
                   "The villagers had stopped trusting his warnings."],
     "technical_prose", ["Our monitoring sent so many false alarms that the team muted them.",
                         "When the real outage came, nobody looked at the alert."], "narrative"),
    ("medical", ["The doctor said the fever is the body fighting the infection.",
                 "Lowering the temperature too fast can slow the immune response."],
     "technical_prose", ["Rate limiting makes the server refuse some requests under attack.",
                         "It hurts users a bit but protects the system from collapse."], "medical"),
    ("mathematics", ["Compound interest makes money grow exponentially over the years.",
                     "Doubling every decade means a thousandfold increase in a century."],
     "medical", ["A single bacterium dividing every twenty minutes becomes millions overnight.",
                 "That is why an infection can spread so quickly before symptoms show."], "mathematics"),
    ("poetry", ["The poem describes autumn leaves letting go of the branch.",
                "Every stanza lets something fall and calls it grace."],
     "philosophical", ["Buddhist teachers speak of non-attachment as the end of suffering.",
                       "Letting go of what we cling to brings peace of mind."], "philosophical"),
    ("physics", ["Entropy means a broken glass never reassembles by itself.",
                 "Disorder grows in any isolated system over time."],
     "historical", ["Once the old republic's institutions decayed, no decree could restore them.",
                    "Civilisations seem to fall apart more easily than they are built."], "physics"),
    ("narrative", ["The story follows a girl who leaves her village to find the source of the river.",
                   "She meets strangers who test her courage along the way."],
     "philosophical", ["The hero's journey is a pattern of leaving home, trial and return.",
                       "Campbell argued every culture tells that same story of growth."], "narrative"),
    ("legal", ["The judge excluded evidence that the police had seized without a warrant.",
               "Even a guilty defendant walked free because of it."],
     "philosophical", ["Is it right to let a wrongdoer go to protect everyone's liberty?",
                       "The means matter as much as the ends, some ethicists argue."], "legal"),
    ("medical", ["Vaccinating most of the town protects the babies who are too young for the shot.",
                 "The disease cannot find enough hosts to spread."],
     "mathematics", ["If each case infects fewer than one new person on average, an outbreak dies out.",
                     "The reproduction number below one means exponential decay."], "medical"),
    ("technical_prose", ["We keep three replicas of the database in different regions.",
                         "If one data centre burns, the other copies keep serving."],
     "historical", ["Medieval monks copied manuscripts in several monasteries.",
                    "When one library burned, the text survived in the other copies."], "historical"),
    ("poetry", ["The sonnet compares love to a star that guides lost ships.",
                "It stays fixed while storms toss the sea below."],
     "physics", ["Sailors navigated by the pole star because it barely moves in the sky.",
                 "Earth's axis points almost straight at it."], "physics"),
    ("narrative", ["The ant worked all summer storing grain while the grasshopper sang.",
                   "When winter came the grasshopper had nothing to eat."],
     "technical_prose", ["We pre-compute the heavy reports at night while traffic is low.",
                         "During the morning peak the servers just read the stored results."], "narrative"),
    ("historical", ["The city walls held off sieges for two hundred years.",
                    "They fell only when a traitor opened a gate from inside."],
     "technical_prose", ["Our firewall blocked every outside attack on the network.",
                         "The breach came from an employee's stolen password."], "technical_prose"),
    ("mathematics", ["A proof by induction shows a statement for one, then from each case to the next.",
                     "Like that, it covers every natural number."],
     "narrative", ["The domino chain fell all the way to the end once the first piece was pushed.",
                   "The children had set each piece close enough to topple the next."], "mathematics"),
    ("medical", ["Chronic stress raises cortisol and weakens the body's defences.",
                 "Patients under long pressure catch infections more easily."],
     "poetry", ["The poem's speaker carries a stone in her chest through every stanza.",
                "By the last verse the weight has worn her voice thin."], "medical"),
    ("physics", ["Resonance lets a small push at the right rhythm build a huge swing.",
                 "Soldiers break step on bridges so their march cannot shake them apart."],
     "historical", ["The revolution began with small protests that grew each week.",
                    "The regime fell when the crowds reached a critical size."], "physics"),
    ("legal", ["The contract's fine print let the company change the price at will.",
               "Customers who never read it could not complain in court."],
     "narrative", ["The devil offered the farmer riches if he signed without reading.",
                   "Years later the farmer learned the hidden price of his bargain."], "legal"),
    ("philosophical", ["Plato imagined prisoners in a cave mistaking shadows for the real world.",
                       "Only the one who left the cave saw the sun itself."],
     "technical_prose", ["Our dashboard showed healthy averages while users suffered timeouts.",
                         "We only saw reality when we looked at the raw request logs."], "philosophical"),
    ("narrative", ["The emperor paraded in invisible clothes and nobody dared to speak.",
                   "Finally a child said he was wearing nothing at all."],
     "technical_prose", ["Everyone on the team knew the release was not ready but nobody objected.",
                         "A new engineer finally said the tests were failing."], "narrative"),
    ("mathematics", ["The shortest path in a graph can be found by always expanding the closest node.",
                     "Dijkstra's method never revisits a settled node."],
     "historical", ["Roman engineers routed roads along the least costly way over the hills.",
                    "Surveyors compared every route before the legions started building."], "mathematics"),
    ("medical", ["Antibiotics used too often let resistant bacteria take over.",
                 "The drugs kill the weak ones and leave the strong ones to multiply."],
     "technical_prose", ["Our spam filter learned the old tricks and spammers switched to new ones.",
                         "Each rule we add selects for the messages that slip past it."], "medical"),
    ("poetry", ["The haiku holds one frog, one pond and one splash.",
                "In that small moment the whole silence of the garden is heard."],
     "philosophical", ["Mindfulness asks us to attend fully to the present moment.",
                       "A single breath noticed completely can be enough."], "philosophical"),
    ("historical", ["The library of the ancient city burned and centuries of scrolls were lost.",
                    "Scholars still guess what plays and treatises vanished with it."],
     "technical_prose", ["A failed disk destroyed our only backup of the customer records.",
                         "We never recovered the orders from that year."], "technical_prose"),
    ("physics", ["Two tuning forks of the same pitch make each other ring.",
                 "Striking one sets the other vibrating across the room."],
     "poetry", ["Her verse answers his as if one heart struck another.",
                "The lovers' lines echo each other across the stanzas."], "poetry"),
    ("legal", ["A will decides who inherits the family house after a death.",
               "Without one, the law divides the estate between the relatives."],
     "narrative", ["The old woman hid a letter in the clock telling who should have the farm.",
                   "Her grandchildren found it only after the funeral."], "legal"),
    ("philosophical", ["Heraclitus said no one steps in the same river twice.",
                       "Everything flows, and the self is always changing."],
     "medical", ["Most cells of the body are replaced every few years.",
                 "Skin, blood and gut lining renew themselves constantly."], "philosophical"),
    ("narrative", ["Icarus flew so close to the sun that the wax of his wings melted.",
                   "He fell into the sea despite his father's warnings."],
     "technical_prose", ["We pushed the servers past their rated load to win the launch day.",
                         "The cluster overheated and crashed in front of every customer."], "narrative"),
]

#: Clauses with a ``{k}`` slot, each used once: a keyword dropped into unrelated talk.
FILLERS: list[str] = [
    "My cousin mentioned {k} while we were looking for a parking spot.",
    "The bakery on the corner had a poster about {k} next to the bread.",
    "Someone on the train was reading about {k} upside down.",
    "Grandma thinks {k} is a kind of cheese.",
    "The quiz show asked a question on {k} and nobody buzzed.",
    "A street musician sang a song whose chorus was {k}.",
    "I found a sticker that said {k} on my old bicycle.",
    "The weather forecast was interrupted by an advert for {k}.",
    "My dog barked when the radio said {k}.",
    "At the wedding the best man joked about {k}.",
    "The crossword clue for seven across was {k}.",
    "Our neighbour painted {k} on the garden fence.",
    "A magazine in the dentist's waiting room had {k} on the cover.",
    "The tour guide pronounced {k} in a strange accent.",
    "There is a cafe downtown named after {k}.",
    "My nephew spelled {k} with magnetic letters on the fridge.",
    "The taxi driver had strong opinions on {k}.",
    "An old postcard in the attic mentioned {k}.",
    "At the gym a trainer shouted {k} for no reason.",
    "The museum gift shop sold mugs printed with {k}.",
    "A bird outside the window sounded a bit like {k}.",
    "The fortune cookie said {k} would bring luck.",
    "The school play had a character called {k}.",
    "I dreamed about {k} after eating cheese late.",
    "The plumber whistled while talking about {k}.",
    "A billboard on the motorway advertised {k}.",
    "The hotel wifi password was {k} plus some digits.",
    "On the beach a kite had {k} written on its tail.",
    "The librarian shelved a novel about {k} in the wrong aisle.",
    "At the market a man sold hats labelled {k}.",
    "My phone autocorrected pancake to {k}.",
    "The karaoke bar had a song titled {k}.",
    "In the queue a child asked her mother about {k}.",
    "The farmer named his tractor {k}.",
    "A graffiti artist sprayed {k} under the bridge.",
    "The cinema trailer mentioned {k} in passing.",
    "A tourist asked me the way to {k} square.",
    "The cereal box had a puzzle about {k} on the back.",
    "My aunt knitted a scarf with {k} stitched in red.",
    "The ferry announcement said something about {k}.",
]
