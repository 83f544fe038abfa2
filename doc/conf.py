"""Sphinx configuration for the skdp documentation.

Build (warnings are errors)::

    python -m sphinx -W -b html doc doc/_build/html

Pages are generated at build time so that they never go stale:

- ``api.rst``: one autosummary table per public module, listing every name in the
  module's ``__all__`` (a name is documented the day it is exported);
- ``benchmarks/<name>.rst``: one page per benchmark, with the tables and plots
  ``benchmarks/run.py`` wrote to ``benchmarks/results/`` (or
  ``$SKDP_BENCH_RESULTS``) and those of the committed snapshot
  (``benchmarks/reference_results/``), and ``_generated/benchmark_index.rst``,
  their table of contents (included by ``benchmarks.rst``).
"""

import os
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parent
ROOT = DOC.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOC / "_ext"))

from skdp_docs import (  # noqa: E402
    write_api_page,
    write_benchmark_pages,
    write_unlisted_pages,
)

import skdp  # noqa: E402

project = "skdp"
author = "skdp developers"
copyright = "skdp developers"
version = release = skdp.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # only for ``.. testsetup::``: the hidden setup of a page's code fragments,
    # which tests/test_doc_snippets.py runs with the page's Python blocks
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
# _generated/ holds files other pages include, not pages of their own
exclude_patterns = ["_build", "_generated", "**/README.rst"]
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

# -- User guide: pages not yet placed in its explicit order -------------------
write_unlisted_pages(
    DOC / "user_guide.rst", DOC / "user_guide", DOC / "_generated" / "user_guide_more.rst"
)

# -- Benchmark results -------------------------------------------------------
write_benchmark_pages(
    Path(os.environ.get("SKDP_BENCH_RESULTS", ROOT / "benchmarks" / "results")),
    snapshot_dir=ROOT / "benchmarks" / "reference_results",
    out_dir=DOC / "benchmarks",
    index_path=DOC / "_generated" / "benchmark_index.rst",
    bench_dir=ROOT / "benchmarks",
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
# formulas render offline (private data often lives where there is no network):
# MathJax 3.2.2's self-contained SVG build ships in _static/mathjax
mathjax_path = "mathjax/tex-svg.js"
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
# benchmark pages: no side columns, so that tables of up to ~20 columns of numbers
# fit at 1280 px (each page removes its "on this page" column itself and starts with
# its own table of contents)
html_sidebars["benchmarks/*"] = []
