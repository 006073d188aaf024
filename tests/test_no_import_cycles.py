"""No module of the package imports itself through a chain of imports.

The graph is grimp's (the one import-linter checks the layers on), built from every ``import``
statement: at module level, inside functions and under ``TYPE_CHECKING`` alike, since each of them
is a dependency a reader must follow and a module that cannot be understood before its importer.
"""

from __future__ import annotations

import grimp


def import_cycles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """One cycle through each direct import ``a -> b`` that ``b`` reaches back to ``a``: the
    modules in import order, ``a`` first and last (each cycle once, from its first module)."""
    cycles = set()
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycle = (importer, *back)
                start = cycle.index(min(cycle[:-1]))
                cycles.add((*cycle[start:-1], *cycle[:start], cycle[start]))
    return sorted(cycles)


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    """The finder on a package of three modules whose cycle closes inside a function and under
    ``TYPE_CHECKING`` (the forms that hid the package's cycles), beside an acyclic import."""
    package = tmp_path / "cyclic_toy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("import cyclic_toy.b\nimport cyclic_toy.leaf\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import cyclic_toy.c\n"
    )
    (package / "c.py").write_text("def f():\n    import cyclic_toy.a\n")
    (package / "leaf.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("cyclic_toy", include_external_packages=False, cache_dir=None)
    assert import_cycles(graph) == [
        ("cyclic_toy.a", "cyclic_toy.b", "cyclic_toy.c", "cyclic_toy.a")
    ]


def test_no_module_imports_itself_through_a_chain():
    graph = grimp.build_graph("bayes_slr", include_external_packages=False, cache_dir=None)
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)
