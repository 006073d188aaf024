"""``notebooks/api_tour.ipynb`` calls every public function in a Jupyter kernel: it runs without
an error, writes nothing on stderr (no warning left uncaught, no progress text: bars are
widgets), shows every result as HTML, and catches the ``ConvergenceWarning`` of a posterior
sampled too briefly on purpose (an ``assert`` in the notebook)."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

import bayes_slr

NOTEBOOK = Path(__file__).parent.parent / "notebooks" / "api_tour.ipynb"
PUBLIC_FUNCTIONS = ("simulate", "bayes_risk", "gap", "theory", "amp", "posterior")
PUBLIC_FUNCTIONS += ("posterior_sweep", "phase", "dynamics")
WIDGET = "application/vnd.jupyter.widget-view+json"


def test_the_tour_calls_every_public_function_renders_html_and_is_silent_on_stderr():
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert all(f"bayes_slr.{name}(" in code for name in PUBLIC_FUNCTIONS)
    assert set(PUBLIC_FUNCTIONS) <= {
        n for n in bayes_slr.__all__ if callable(getattr(bayes_slr, n))
    }
    NotebookClient(notebook, timeout=600, kernel_name="python3").execute(cwd=str(NOTEBOOK.parent))
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert [o.text for o in outputs if o.output_type == "stream" and o.name == "stderr"] == []
    results = [o for o in outputs if o.output_type == "execute_result"]
    assert len(results) >= len(PUBLIC_FUNCTIONS)
    assert all("text/html" in o.data for o in results)
    assert any(WIDGET in o.get("data", {}) for o in outputs)  # progress as widgets
    assert any("caught:" in o.get("text", "") and "ConvergenceWarning" in o.text for o in outputs)
