# Generated from notebook 01_wordpiece.ipynb by minibert_course.export: edit the notebook, not this file.
# Generated from notebook 03_attention.ipynb by minibert_course.export: edit the notebook, not this file.
# Generated from notebook 06_pretraining.ipynb by minibert_course.export: edit the notebook, not this file.
# Generated from notebook 07_task_heads.ipynb by minibert_course.export: edit the notebook, not this file.
"""minibert: a small, readable BERT whose code students write, chapter by chapter, in the course notebooks."""

from importlib.metadata import PackageNotFoundError, version

from minibert.tokenization import BasicTokenizer as BasicTokenizer  # "X as X": a public re-export
from minibert.tokenization import BertTokenizer as BertTokenizer
from minibert.tokenization import WordPieceTokenizer as WordPieceTokenizer

try:
    __version__ = version("minibert")
except PackageNotFoundError:  # imported from a source tree that is not installed
    __version__ = "0.0.0"


from minibert.config import BertConfig as BertConfig  # noqa: E402
from minibert.model import BertModel as BertModel  # noqa: E402


from minibert.heads import BertForMaskedLM as BertForMaskedLM  # noqa: E402
from minibert.heads import BertForPreTraining as BertForPreTraining  # noqa: E402


from minibert.tasks import BertForQuestionAnswering as BertForQuestionAnswering  # noqa: E402
from minibert.tasks import BertForSequenceClassification as BertForSequenceClassification  # noqa: E402
from minibert.tasks import BertForTokenClassification as BertForTokenClassification  # noqa: E402

# the package's API: the models and tokenizers (each module's own API is its __all__)
__all__ = ["BertConfig", "BertModel", "BertForPreTraining", "BertForMaskedLM", "BertForSequenceClassification",
           "BertForTokenClassification", "BertForQuestionAnswering", "BertTokenizer", "BasicTokenizer",
           "WordPieceTokenizer"]
