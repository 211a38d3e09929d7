"""MkDocs hook: the Python API page (reference/api.md) documents exactly what ``deliberation`` exports.

``deliberation/__init__.py`` names its public objects in ``__all__`` and loads each lazily from the module in
``_LAZY``; this hook turns that table into one mkdocstrings block per name, so a name added to or removed from
the package's seam is added to or removed from the page, and its text is the object's own docstring.
"""

from __future__ import annotations

MARKER = "<!-- api-reference -->"
PAGE = "reference/api.md"


def targets() -> list[tuple[str, str]]:
    """(public name, dotted path of the object it is) for every name in ``deliberation.__all__``."""
    import deliberation

    lazy = {name: target.replace(":", ".") for name, target in deliberation._LAZY.items()}
    return [(name, lazy[name] if name in lazy else f"{getattr(deliberation, name).__module__}.{name}")
            for name in deliberation.__all__]


def render() -> str:
    """One section per public name: how to import it, then mkdocstrings' rendering of the object under the
    path where it is defined, with its signature (that heading is kept out of the table of contents, which
    lists the public names)."""
    options = ["    options:", "      show_root_heading: true", "      show_root_toc_entry: false"]
    parts = []
    for name, path in targets():
        parts += [f"## `deliberation.{name}`", "", f"`from deliberation import {name}`", "",
                  f"::: {path}", *options, ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Put the generated blocks where the page's marker is; every other page is left as written."""
    if page.file.src_uri != PAGE:
        return markdown
    if MARKER not in markdown:
        raise ValueError(f"{PAGE} lost its marker {MARKER}; put it back where the API reference goes")
    return markdown.replace(MARKER, render())
