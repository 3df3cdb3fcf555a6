"""The public API, pinned: each package's ``__all__``, and every name the docs use from it.

A name added to or dropped from an ``__all__`` is an API change; it fails here until the pin
below changes with it. The API pages (docs/api/*.md) render each module's ``__all__``; a name a
package imports from such a module is public there, so it must be in the package's ``__all__``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from pathlib import Path
from typing import Any

import pytest

import redmem

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Each package's ``__all__``, as a sorted list.
PINNED = {
    "redmem": [
        "AccessTrackerMixin", "AdaptiveAssembler", "Analyzer", "ArgumentTypeError",
        "AssemblerConfig", "AssemblyResult", "AutoKeyField", "BM25Field", "BooleanField", "BytesField",
        "CoOccurrenceField", "ConfidenceField", "ConfigurationError", "ContextAssembler",
        "CyclicDecayField", "DatetimeField", "DbKey", "DecayingSortedField", "DefaultMemory",
        "DictField", "EmbeddingError", "EmbeddingField", "Entity", "EventStreamMixin",
        "ExistenceFilter", "Field", "FloatField", "FrequencySketch", "HashingEmbeddings", "Hit",
        "HitList", "HybridMemory", "IndexNotBuiltWarning", "IntField", "KeyField", "ListField", "Memory", "MemoryTooLarge",
        "MigrationReport", "MiniLMEmbeddings", "Model",
        "ModelException", "ObservationProtocol", "OpenAIEmbeddings", "OutcomeError",
        "PermissionDenied", "PolicyCache", "PredictionLedgerMixin", "QueryArgumentError",
        "QueryArgumentTypeError", "QueryException", "RecallProposal", "RecordNotFound",
        "RedmemError", "RetrievalQuality", "SchemaChangedWarning", "SchemaWarning", "ServerError", "ServerUnavailable",
        "SortedField", "StreamConsumer",
        "StreamEvent", "StringField", "SubconsciousMemory", "TagField", "TemporalPeriod",
        "ValidationError", "WriteConflict", "WriteFilterMixin", "WriteOutcomeUnknown", "WriteRefused",
        "aclose_clients",
        "configure", "connect", "default_analyzer", "estimate_tokens", "exact_counter", "get_client",
        "query_adaptive_weights", "reciprocal_rank_fusion", "reindex", "resolve_counter",
    ],
    "redmem.store": [
        "AgentNotServed", "ArgumentTypeError", "ConfigurationError", "DATA_DIR_ENV_VAR", "DataDirectoryError",
        "EmbeddedServer", "EmbeddingError", "ExportError", "ExtractionError", "KeySpace", "LocalServer",
        "MemoryTooLarge", "MissingQueryMethod", "ModelException", "OutcomeError", "PermissionDenied",
        "QueryArgumentError", "QueryArgumentTypeError", "QueryException", "RecordNotFound", "RedmemError",
        "ServerError", "ServerUnavailable", "ValidationError", "WriteConflict", "WriteOutcomeUnknown", "WriteRefused",
        "aclose_clients", "configure", "connect", "escape", "get_client", "server_address", "settings", "unescape"
    ],
    "redmem.fields": [
        "BM25Field", "BM25Search", "CoOccurrenceField", "ConfidenceField", "CyclicDecayField", "DecayingSortedField",
        "EmbeddingField", "Entity", "ExistenceFilter", "FrequencySketch", "TemporalPeriod", "above_cyclic_threshold",
        "composite_score", "embed_many", "keyword_search", "new_cache_epoch", "reindex", "restore_partition",
        "top_by_decay"
    ],
    "redmem.observation": [
        "AccessTrackerMixin", "EventStreamMixin", "OUTCOME_EFFECTS", "OUTCOME_ERRORS",
        "ObservationProtocol", "OutcomeEffects", "OutcomeError", "PredictionLedgerMixin",
        "RecallProposal", "ResolvedPrediction", "StreamConsumer", "StreamEvent", "WriteFilterMixin",
        "prediction_error", "summarize_errors", "top_by_priority",
    ],
    "redmem.recipes": [
        "AdaptiveAssembler", "AssemblerConfig", "AssemblyResult", "ContextAssembler", "DefaultMemory",
        "HeuristicExtractor", "HybridMemory", "LLMExtractor", "Memory", "PolicyCache", "Retention",
        "RetrievalQuality", "SubconsciousMemory", "apply_retention", "archived", "assess_retrieval", "erase_tenant",
        "export_tenant", "import_tenant", "tenant_key_count"
    ],
    "redmem.recipes.assembler": [
        "AdaptiveAssembler", "AssemblerConfig", "AssemblyResult", "ContextAssembler", "ConversationMemory",
        "DefaultMemory", "HybridMemory", "Memory", "RetrievalQuality", "SubconsciousMemory", "assess_retrieval",
        "conversation_assembler", "ingest_conversation",
    ],
    "redmem.recipes.policy": ["PolicyCache", "PolicyEntry", "PolicyEvent", "PolicyRules"],
    "redmem.recipes.hsca": [
        "AgentBeat", "AgentMacro", "Beat", "ConceptAppearance", "ContextSnapshot", "DomainStep", "DomainTag",
        "EmbeddingDomains", "HSCAEngine", "HSCAParameters", "NuanceFlag", "NuanceModel", "RelevantBeat",
        "ServedQuery", "ServedRecord", "SessionProfile", "SessionStore", "SnapshotPassage", "SnapshotRecord",
        "TunedParameters", "TuningResult", "WeightedChunk", "tune",
    ],
    "redmem.recipes.frames": [
        "ATTENTION_FRAME", "ATTENTION_WEIGHTS", "BUILTIN_FRAMES", "Block", "CachePolicy", "FrameCache",
        "FrameDefinition", "FrameFilters", "FrameMemory", "FrameResult", "LearnWiring",
        "OpenAIContradictionJudge", "PrefixIndexField", "SELF_FRAME", "SELF_WEIGHTS", "ScoredBlock",
        "ScoringWeights", "TASK_FRAME", "TASK_WEIGHTS", "get_frame_definition", "heuristic_judge", "render_blocks",
        "rules_judge",
    ],
    "redmem.recipes.hce": [
        "ContextCandidate", "EdgeType", "EntityExtractor", "EntityGraph", "ExportError", "ExtractedEntity",
        "FocusBuffer", "FocusEntry", "HCEGroup", "HCEInteraction", "HCEPipeline", "HCETopic", "NodeType",
        "RetrievedContext", "SemanticTree", "TopicSummary", "TreeHit", "context_budgeting", "estimate_tokens",
        "extractive_summary", "hierarchical_relevance_search", "spreading_activation",
    ],
    "redmem.context": [
        "Budget", "Capabilities", "ContextResult", "Explanation", "FORMATS", "Fusion", "Packed", "Renderer",
        "Retrieval", "TokenCounter", "compose", "convex_fusion", "default_counter", "estimate_tokens",
        "exact_counter", "fuse", "keyword_hits", "pack", "pack_slices", "query_adaptive_weights",
        "reciprocal_rank_fusion", "record_view", "render_slice", "resolve_counter", "retrieve",
        "seed_tiktoken_cache",
    ],
}


def api_modules() -> list[str]:
    """The modules the API pages render, from their ``::: module`` lines."""
    return [name for page in sorted((DOCS / "api").glob("*.md"))
            for name in re.findall(r"^::: ([\w.]+)", page.read_text(), re.MULTILINE)]


def docs_imports() -> list[tuple[str, str, str]]:
    """(page, module, name) for each name a docs page imports with ``from redmem... import``."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        statements = re.findall(r"from (redmem[\w.]*) import (?:\(([^)]*)\)|([^\n]+))", page.read_text())
        for module, grouped, inline in statements:
            for item in (grouped or inline).split("#")[0].split(","):
                if item.strip():
                    found.append((page.relative_to(DOCS).as_posix(), module, item.split()[0]))
    return found


@pytest.mark.parametrize("package", sorted(PINNED))
def test_all_is_pinned(package):
    assert PINNED[package] == sorted(PINNED[package])
    assert sorted(importlib.import_module(package).__all__) == PINNED[package]


@pytest.mark.parametrize("package", sorted(PINNED))
def test_every_name_in_all_exists_once(package):
    module = importlib.import_module(package)
    assert len(set(module.__all__)) == len(module.__all__)
    assert [name for name in module.__all__ if not hasattr(module, name)] == []


def test_names_a_package_takes_from_a_documented_module_are_in_its_all():
    """A documented name reachable as ``package.name`` (or ``redmem.name``) is listed in that ``__all__``."""
    missing = []
    for name in api_modules():
        module = importlib.import_module(name)
        packages = {"redmem", ".".join(name.split(".")[:2])} & set(PINNED)
        for package in map(importlib.import_module, packages):
            missing += [f"{package.__name__}.{public}" for public in module.__all__
                        if getattr(package, public, None) is getattr(module, public)
                        and not inspect.ismodule(getattr(module, public)) and public not in package.__all__]
    assert api_modules() and missing == []


def test_names_the_docs_import_are_in_the_modules_all():
    imports = docs_imports()
    assert len(imports) > 100  # the pages' examples are found
    missing = [(page, module, name) for page, module, name in imports
               if name not in getattr(importlib.import_module(module), "__all__", [name])]
    assert missing == []


def test_every_public_name_of_the_lazy_face_resolves_to_its_home():
    """``redmem/__init__`` imports its names on first use: each name of ``__all__`` must have a home
    module that defines it (a name listed but not homed would fail only at a user's first use)."""
    for name in redmem.__all__:
        home = importlib.import_module(redmem._HOMES[name], "redmem")
        assert getattr(redmem, name) is getattr(home, name), name


def test_every_public_name_is_homed_in_a_package_face():
    """A public name's home is a package's face (``redmem.fields``, ``redmem.recipes``, ...), never
    an implementation module, so where a name lives can change without changing where it is found."""
    for name, home in redmem._HOMES.items():
        module = importlib.import_module(home, "redmem")
        assert module.__file__ is not None and module.__file__.endswith("__init__.py"), (name, home)
        assert name in module.__all__, (name, home)


SRC = DOCS.parent / "src"
#: Every package face of redmem.
FACES = sorted(".".join(p.relative_to(SRC).parent.parts) for p in (SRC / "redmem").rglob("__init__.py"))
#: Exported functions and classes whose annotations name ``Model`` imported under ``TYPE_CHECKING``
#: in their home module: ``typing.get_type_hints`` fails on them there as well, whatever their ``__module__``.
ANNOTATION_ONLY_IMPORTS = {
    "reindex", "Renderer", "assess_retrieval", "apply_retention", "archived", "erase_tenant", "export_tenant",
    "import_tenant", "tenant_key_count",
}


def exported() -> list[tuple[str, str, Any]]:
    """(face, name, object) for every redmem class and function a package face exports."""
    found = []
    for face in FACES:
        module = importlib.import_module(face)
        for name in getattr(module, "__all__", []):
            value = getattr(module, name)
            if (inspect.isclass(value) or inspect.isfunction(value)) and value.__module__.startswith("redmem"):
                found.append((face, name, value))
    return found


def test_every_exported_class_and_function_reports_a_public_module() -> None:
    """``__module__`` names a face (or a public module) that has the object under its own name, never the
    ``_`` module that defines it: reprs, pickles and the API reference show where a reader imports it."""
    wrong = [(face, name, value.__module__) for face, name, value in exported()
             if any(part.startswith("_") for part in value.__module__.split("."))
             or getattr(importlib.import_module(value.__module__), value.__name__, None) is not value]
    assert len(exported()) > 300 and wrong == []


def test_type_hints_of_every_exported_name_resolve() -> None:
    """Reporting the face does not break ``typing.get_type_hints``: a class's string annotations are
    evaluated in its home module before its ``__module__`` changes (redmem/_public.py)."""
    failing = set()
    for _, name, value in exported():
        try:
            typing.get_type_hints(value)
        except NameError:
            failing.add(name)
    assert failing <= ANNOTATION_ONLY_IMPORTS, sorted(failing - ANNOTATION_ONLY_IMPORTS)


def test_docs_and_examples_import_no_private_module() -> None:
    """Examples import from a package face (or a module listed in PUBLIC_MODULES), never from a ``_`` module."""
    texts = [*DOCS.rglob("*.md"), *(DOCS.parent / "recipes").glob("*.py"), DOCS.parent / "README.md"]
    private = [(path.name, found) for path in texts
               for found in re.findall(r"(?:from|import) (redmem(?:\.\w+)*\._\w+)", path.read_text())]
    assert private == []


def test_the_api_reference_renders_the_faces_and_the_public_modules_only() -> None:
    """The pages render package faces, the two extension contracts and the modules read by path
    (test_architecture.PUBLIC_MODULES pins which modules are public), never a ``_`` module."""
    rendered = api_modules()
    assert [name for name in rendered if any(part.startswith("_") for part in name.split("."))] == []
    assert {"redmem.fields.search_protocol", "redmem.model.query_methods"} <= set(rendered)


def test_every_subpackage_the_lazy_face_names_is_public_and_imports() -> None:
    """``redmem.<name>`` of ``_PACKAGES`` is a face or a public module (the demo module went private as ``_demo.py``)."""
    for name in sorted(redmem._PACKAGES):
        module = getattr(redmem, name)
        assert inspect.ismodule(module) and module.__name__ == f"redmem.{name}"
