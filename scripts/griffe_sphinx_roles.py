"""A griffe extension for the API reference (mkdocs.yml): the docstrings' Sphinx roles as code.

The package's docstrings are Google style, but name other objects the Sphinx way
(``:class:`~payload_estimator.core.results.Estimate```) and end a paragraph before a literal
block with ``::``. mkdocstrings renders Markdown, where both would show as typed: this turns a
role into a code span (the last component only after ``~``, as Sphinx shows it) and ``::`` into
``:`` (the indented block after it is already a code block in Markdown).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:class|mod|data|func|meth|attr|exc|obj|const|ref):`(~?)([^`]+)`")
_LITERAL_BLOCK = re.compile(r"::$", re.MULTILINE)


def markdown_docstring(text: str) -> str:
    """Return ``text`` with its Sphinx roles as code spans and its ``::`` as ``:``."""

    def code(match: re.Match[str]) -> str:
        target = match[2]
        return f"`{target.rsplit('.', 1)[-1] if match[1] else target}`"

    return _LITERAL_BLOCK.sub(":", _ROLE.sub(code, text))


class SphinxRolesAsCode(griffe.Extension):
    """Rewrites every object's docstring with :func:`markdown_docstring` once it is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring, if it has one."""
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
