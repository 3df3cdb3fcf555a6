"""Tool arguments the MCP server checks strictly: an unknown argument is an error, not silently
dropped (a misspelt ``max_token`` would otherwise fall back to the default budget), and
validation errors read without the pydantic documentation link each line would otherwise carry.

The ``mcp`` SDK builds a pydantic model of each tool's arguments; :func:`strict_arguments`
swaps it for a subclass that forbids extra fields and rewrites its errors, and marks the tool's
published JSON schema ``additionalProperties: false``. pydantic comes with the ``mcp`` extra and
is imported only when a server is built.
"""

from __future__ import annotations

from typing import Any

__all__ = ["strict_arguments", "UNKNOWN_ARGUMENT"]

#: The message of an argument the tool does not take (its names follow).
UNKNOWN_ARGUMENT = "unknown argument; this tool takes"


def strict_arguments(tool: Any) -> None:
    """Make ``tool`` (an SDK ``Tool``) refuse unknown arguments and report errors without URLs."""
    from pydantic import ValidationError

    base = tool.fn_metadata.arg_model
    names = ", ".join(base.model_fields)
    validate = base.model_validate.__func__

    def model_validate(cls: Any, /, obj: Any, **options: Any) -> Any:
        try:
            return validate(cls, obj, **options)
        except ValidationError as exc:
            raise readable(exc, names) from None

    strict = type(base.__name__, (base,), {"model_config": {**base.model_config, "extra": "forbid"},
                                           "model_validate": classmethod(model_validate),
                                           "__module__": base.__module__})
    tool.fn_metadata.arg_model = strict
    tool.parameters["additionalProperties"] = False


def readable(error: Any, names: str) -> Any:
    """The same pydantic ValidationError with each line's message only (no documentation link),
    an unknown argument's message naming the arguments the tool takes."""
    from pydantic import ValidationError
    from pydantic_core import InitErrorDetails, PydanticCustomError

    lines: list[InitErrorDetails] = []
    for line in error.errors(include_url=False):
        message = f"{UNKNOWN_ARGUMENT} {names}" if line["type"] == "extra_forbidden" else line["msg"]
        lines.append({"type": PydanticCustomError(line["type"], message.replace("{", "(").replace("}", ")")),
                      "loc": line["loc"], "input": line["input"]})
    return ValidationError.from_exception_data(error.title, lines)
