"""The API tour is executed by ``tests/test_api_tour.py``, which also checks what it writes on
stderr; nbmake does not run it a second time."""

collect_ignore = ["api_tour.ipynb"]
