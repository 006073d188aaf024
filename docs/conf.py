"""Sphinx configuration of the documentation site (``make docs``; ``make test`` builds it with
warnings as errors).

The pages are the Markdown files of this folder (MyST), the API reference is generated from the
docstrings (autodoc, autosummary, napoleon for the NumPy-style sections), and the gallery shows
the committed notebooks with their outputs, never executed here.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

DOCS = Path(__file__).parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))

import bayes_slr  # noqa: E402
from bayes_slr.api import PUBLIC_FUNCTIONS  # noqa: E402

project = "bayes-slr"
author = "the bayes-slr authors"
copyright = "the bayes-slr authors"  # noqa: A001
release = version = bayes_slr.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx_design",
]
templates_path = ["_templates"]

# The notebooks are shown as committed (executed by the test suite, with their outputs).
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

exclude_patterns = ["_build", "results/**", "Thumbs.db", ".DS_Store"]

# --- API reference ---------------------------------------------------------------------------
autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
python_maximum_signature_line_length = 88
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_attr_annotations = False
# the generated docstrings name each function's result type by its class name alone
napoleon_type_aliases = {
    function.__signature__.return_annotation.__name__: (
        f":class:`~{function.__signature__.return_annotation.__module__}."
        f"{function.__signature__.return_annotation.__qualname__}`"
    )
    for function in PUBLIC_FUNCTIONS.values()
}

# Every cross-reference must resolve (a broken one fails ``make test``), except names of other
# libraries: the build reaches no network, so it has no inventory of theirs.
nitpicky = True
nitpick_ignore_regex = [
    ("py:.*", r"(pathlib|numpy|pandas|xarray|matplotlib|jax|numpyro|arviz)(\..*)?"),
    ("py:.*", r"(warnings|Path|ndarray|DataFrame|DataTree|Axes|Figure|Array)"),
]


TYPE = r"^[\w.\[\]]+(\s*(\||,|\bor\b|\bof\b)\s*[\w.\[\]]+)*$"
"""A type as NumPy style writes it (``float | None``, ``tuple of str``), not a sentence."""


def _project_sections(app, what, name, obj, options, lines) -> None:
    """The project writes ``name : what it is.`` (a sentence, not a type) in the Attributes and
    Parameters sections of its records; turn such an entry into NumPy style's name and indented
    description before napoleon reads it (connected ahead of napoleon)."""
    section = None
    for index, line in enumerate(list(lines)):
        if index + 1 < len(lines) and set(lines[index + 1].strip()) == {"-"}:
            section = line.strip()
        match = re.match(r"^(\w[\w, ]*) : (.*)$", line)
        if section in ("Attributes", "Parameters") and match and not re.match(TYPE, match[2]):
            lines[index] = f"{match[1]}\n    {match[2][0].upper()}{match[2][1:]}"
    lines[:] = "\n".join(lines).splitlines()


def _property_sentence(app, what, name, obj, options, lines) -> None:
    """A property's docstring that opens with ``Some words: more`` is a sentence, which napoleon
    has read as type ``Some words``: put the words back (connected after napoleon)."""
    typed = [i for i, line in enumerate(lines) if line.startswith(":type: ")]
    if what in ("attribute", "property") and typed and lines:
        words = lines[typed[0]].removeprefix(":type: ")
        if not re.match(TYPE, words):
            del lines[typed[0]]
            lines[0] = f"{words}: {lines[0]}"


def _literal_bars(app, what, name, obj, options, lines) -> None:
    """The public functions' docstrings write norms as ``|k*|^2``: not reST substitutions."""
    if obj in PUBLIC_FUNCTIONS.values():
        for index, line in enumerate(lines):
            if not re.match(r"^\w+ : ", line):
                lines[index] = line.replace("|", "\\|")


def _signature(app, what, name, obj, options, signature, return_annotation):
    """A public function returns its result type (its ``__signature__`` says so; the function
    object made at import is annotated ``Any``); a result or record is made by its function,
    not by hand: no constructor signature."""
    if obj in PUBLIC_FUNCTIONS.values():
        result = inspect.signature(obj).return_annotation
        return signature, f"{result.__module__}.{result.__qualname__}"
    return ("", None) if what == "class" and signature is not None else None


def _importable(name: str) -> bool:
    """Whether ``name`` is a module of bayes_slr or an attribute reached from one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
        return True
    return False


def _internal_reference(app, env, node, contnode):
    """Resolve what the reference does not document but the code holds.

    A name documented once under a longer path (``summary``: ``PosteriorResult.summary``) links
    there; a docstring's reference to an internal name of bayes_slr (a helper, a constant) that
    exists is shown as code. Anything else stays a broken reference, which fails the build.
    """
    if node.get("refdomain") != "py":  # a module, class, function, attribute, constant
        return None
    target = node["reftarget"]
    domain = env.get_domain("py")
    documented = [name for name in domain.objects if name.endswith("." + target)]
    if len(documented) == 1:
        return domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], documented[0], node, contnode
        )
    module, cls = node.get("py:module") or "", node.get("py:class")
    candidates = [target, f"{module}.{target}", f"{module}.{cls}.{target}" if cls else ""]
    internal = [name for name in candidates if name.startswith("bayes_slr.")]
    return contnode if any(_importable(name) for name in internal) else None


# --- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "bayes-slr"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["custom.css"]


# --- the gallery: the committed notebooks, copied beside the pages ---------------------------
def _write_if_changed(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` unless it holds it already (Sphinx then keeps its cache)."""
    if not path.exists() or path.read_bytes() != content:
        path.write_bytes(content)


def _first_figure(notebook: Path) -> bytes | None:
    """The first PNG among the notebook's committed outputs (its gallery thumbnail)."""
    import base64

    import nbformat

    for cell in nbformat.read(notebook, as_version=4).cells:
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                return base64.b64decode(output["data"]["image/png"])
    return None


def _copy_notebooks(app) -> None:
    """Copy ``notebooks/*.ipynb`` to ``docs/gallery/`` (gitignored), where the gallery's toctree
    finds them, and each one's first figure to ``docs/gallery/thumbs/`` for its card."""
    thumbs = DOCS / "gallery" / "thumbs"
    thumbs.mkdir(parents=True, exist_ok=True)
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        _write_if_changed(DOCS / "gallery" / notebook.name, notebook.read_bytes())
        figure = _first_figure(notebook)
        if figure is not None:
            _write_if_changed(thumbs / f"{notebook.stem}.png", figure)


def setup(app) -> None:
    app.connect("autodoc-process-signature", _signature)
    app.connect("missing-reference", _internal_reference)
    app.connect("builder-inited", _copy_notebooks)
    app.connect("autodoc-process-docstring", _project_sections, priority=400)
    app.connect("autodoc-process-docstring", _literal_bars, priority=400)
    app.connect("autodoc-process-docstring", _property_sentence, priority=600)
