"""Sphinx configuration for the skdp documentation.

Build (warnings are errors)::

    python -m sphinx -W -b html doc doc/_build/html

Two pages are generated at build time so that they never go stale:

- ``api.rst``: one autosummary table per public module, listing every name in the
  module's ``__all__`` (a name is documented the day it is exported);
- ``_generated/benchmark_results.rst``: the tables ``benchmarks/run.py`` wrote to
  ``benchmarks/results/`` (or ``$SKDP_BENCH_RESULTS``), or instructions to produce
  them when there are none.
"""

import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent
ROOT = DOC.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOC / "_ext"))

from skdp_docs import write_api_page, write_benchmark_page  # noqa: E402

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
copyright = "skdp developers"
version = release = skdp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated/*.md", "**/README.rst"]
root_doc = "index"

# -- API reference -----------------------------------------------------------
write_api_page(DOC / "api.rst")
autosummary_generate = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# numpydoc's cross-reference of "array-like", "default=" etc. off: plain text
numpydoc_xref_param_type = False
# the bibliography lists papers not every page cites
suppress_warnings = ["ref.citation"]

# -- Benchmark results -------------------------------------------------------
write_benchmark_page(
    Path(os.environ.get("SKDP_BENCH_RESULTS", ROOT / "benchmarks" / "results")),
    DOC / "_generated" / "benchmark_results.rst",
    snapshot_dir=ROOT / "benchmarks" / "reference_results",
)

# -- Examples gallery ----------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 1,
    "within_subsection_order": "FileNameSortKey",
}

# -- HTML ----------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skdp {release}"
html_static_path = ["_static"]
html_css_files = ["skdp.css"]
html_show_sourcelink = False
html_theme_options = {
    "navbar_end": ["theme-switcher"],
    "show_prev_next": False,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}
# single pages with no sub-pages: no empty "Section Navigation" column
html_sidebars = {
    page: [] for page in ("index", "install", "benchmarks", "references", "development")
}
