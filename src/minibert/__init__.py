# Generated from notebook 01_wordpiece.ipynb by minibert_course.export: edit the notebook, not this file.
"""minibert: a small, readable BERT whose code students write, chapter by chapter, in the course notebooks."""

from importlib.metadata import PackageNotFoundError, version

from minibert.tokenization import BasicTokenizer, BertTokenizer, WordPieceTokenizer

__all__ = ["BasicTokenizer", "BertTokenizer", "WordPieceTokenizer"]

try:
    __version__ = version("minibert")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"
