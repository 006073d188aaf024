"""Claims files shipped with the toolkit (``seed_paper.toml``: the default of ``check``)."""
