"""The honest suite: correct answers written the way real students write them, each of which must keep full marks.

    python -m autograder.honest --check [--chapter 04_masking ...] [--name NAME ...] [--jobs N]
    python -m autograder.honest --grade DIR [--chapter ...] [--jobs N] [--table docs/honest.md]
    python -m autograder.honest --list

The mutation catalogue (autograder/mutants/) proves that wrong answers lose points; this catalogue proves the other
half: an answer that is right keeps every point, whatever its style. `VARIANTS` lists, per chapter, answers that
behave exactly like the solution on every input the tests could use, in styles that a static screen would punish: a
leftover `import inspect` or `import gc; gc.collect()`, a helper class with `__eq__`, a docstring that mentions
`__call__` and nbgrader, `config.__dict__`, a helper in a cell the student added, `%%time` and `%timeit`, numpy,
recursion, `print` and `logging` inside the student's functions, ...

A variant is `dict(chapter=..., exercise=<grade_id of a solution cell> or None, name=..., why=..., and one of
edits=[(old, new), ...] (each `old` occurs exactly once in the solution cell) or source=<the whole new answer>;
optionally added_cells=[...] (code cells the student adds right after that answer cell; at the end of the notebook
when exercise is None) and added_before=[...] (cells added right before it))`.

`--check` is the proof of correctness: for every variant it runs the SOLUTION notebook (hidden tests in place) with
the variant's answer and added cells, top to bottom, in a plain Jupyter kernel (nbclient), as the student's own
kernel would; every test cell must pass and no cell may fail. `--grade DIR` grades the variants (and each chapter's
control, the solutions unedited) for real with autograder/grade.py; the suite's class run (tests/conftest.py
`graded_class`) grades them too, and tests/course/test_honest.py checks that every variant keeps the control's score.

Chapters 04 and 10 draw random numbers: a variant there keeps the solution's draws, in the same order (the hidden
tests fix the seeds and compare with the reference draws), so it is equivalent, not merely plausible.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import mutation  # the released notebook answered with the solutions

ROOT = mutation.ROOT
CONTROL = mutation.CONTROL


@dataclass
class Variant:
    chapter: str
    exercise: str | None  # grade_id of the solution cell it answers differently; None: only cells added at the end
    name: str
    why: str
    edits: list[tuple[str, str]] = field(default_factory=list)
    source: str | None = None  # the whole answer, instead of edits
    added_cells: list[str] = field(default_factory=list)  # code cells added right after the answer cell
    added_before: list[str] = field(default_factory=list)  # code cells added right before it

    @property
    def student(self) -> str:
        return f"o{self.chapter[:2]}-{self.name}"


# ---- the catalogue ---------------------------------------------------------------------------------------------

_TIMING_CELL = '''%%time
%timeit x = 1
example = ["[CLS]", "un", "##happy", "##ness", "of", "[SEP]"]
print(example, "->", word_ids_from_tokens(example))
'''

_COUNT_HELPERS = '''def table_parameters(rows: int, width: int) -> int:
    """An nn.Embedding(rows, width) holds rows x width weights."""
    return rows * width


def layernorm_parameters(width: int) -> int:
    return 2 * width  # its weight and its bias
'''

_ALIGN_HELPER = '''import itertools


def label_of(word, previous, word_labels, label_all_pieces=False):
    """The label of one piece, given the word of the piece before it (None: no word)."""
    if word is None:
        return IGNORE_INDEX
    if word != previous or label_all_pieces:
        return word_labels[word]
    return IGNORE_INDEX
'''

_SEQ_CLS_PROBLEM = '''            problem = self.config.problem_type or (
                "regression" if self.num_labels == 1
                else "single_label_classification" if not labels.is_floating_point()
                else "multi_label_classification")'''

_SEQ_CLS_METHODS = '''        self.init_weights()

    @classmethod
    def from_config(cls, config: BertConfig) -> "BertForSequenceClassification":
        """A fresh model for `config` (the way I build them in my experiments)."""
        return cls(config)

    @staticmethod
    def problem_of(config: BertConfig, labels: torch.Tensor) -> str:
        """How the loss reads the labels, decided as transformers decides it."""
        if config.problem_type:
            return config.problem_type
        if config.num_labels == 1:
            return "regression"
        return "multi_label_classification" if labels.is_floating_point() else "single_label_classification"

    def forward('''

_QUIZ = '''# quiz = {"x_tilde": LETTER, "M": LETTER, "why_not_all_mask": LETTER, "nsp_purpose": LETTER,
#         "glue_score": NUMBER, "glue_gain": NUMBER, "squad_f1": NUMBER, "modernbert_rate": NUMBER}
import types

answers = types.SimpleNamespace(
    x_tilde="b", M="b", why_not_all_mask="b", nsp_purpose="a",
    glue_score=80.5, glue_gain=7.7, squad_f1=90.9, modernbert_rate=0.30,
)
quiz = vars(answers)  # the namespace's own dict
'''

_STATEMENTS = '''# verdicts = {"s1": True or False, "s2": ..., ..., "s10": ...}
verdicts = dict((f"s{i}", i % 2 == 0) for i in range(1, 11))  # read them all: the even ones are the true ones
'''

_COMPARISON = '''# my table, one row per model: (objective, loss_positions, main_change, later_use)
from IPython.display import display

axes = ("objective", "loss_positions", "main_change", "later_use")
comparison = {model: dict(zip(axes, letters))
              for model, letters in [("BERT", "aaaa"), ("RoBERTa", "baba"), ("ELECTRA", "cccb")]}
display(comparison)
'''

_WORD_TAGS = """    tags = ["O"] * n_words
    tagged = set()
    for word, tag in zip(word_ids, piece_tags, strict=True):
        if word is not None and word not in tagged:
            tags[word] = tag
            tagged.add(word)
    return tags"""  # the body of chapter 08's word_tags solution

VARIANTS = [
    # ---- 01_wordpiece ---------------------------------------------------------------------------------------------
    dict(chapter="01_wordpiece", exercise="wordpiece-solution", name="wordpiece-for-else-typing",
         why="the inner search as `for end in range(...)` with a for-else, `typing.List` annotations",
         edits=[("#| export\nclass WordPieceTokenizer",
                 "#| export\nfrom typing import List\n\n\nclass WordPieceTokenizer"),
                ("""        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            piece = None
            while start < end:
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    piece = candidate
                    break
                end -= 1
            if piece is None:  # nothing matches here: the whole word is unknown
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces""", """        pieces: List[str] = []
        start = 0
        while start < len(word):
            for end in range(len(word), start, -1):  # the longest candidate first
                candidate = word[start:end] if start == 0 else "##" + word[start:end]
                if candidate in self.vocab:
                    break
            else:  # nothing matches here: the whole word is unknown
                return [self.unk_token]
            pieces.append(candidate)
            start = end
        return pieces""")]),
    dict(chapter="01_wordpiece", exercise="input-format-solution", name="input-format-lambda-sys-path",
         why='a leftover `import sys; sys.path.append("/tmp")` and a `lambda` that closes a segment with [SEP]',
         edits=[("#| export\ndef build_inputs",
                 '#| export\nimport sys\n\nsys.path.append("/tmp")  # where I keep my scratch modules\n\n\n'
                 "def build_inputs"),
                ("    tokens = [CLS, *tokens_a, SEP]\n",
                 "    close = lambda part: [*part, SEP]  # noqa: E731\n    tokens = close([CLS, *tokens_a])\n"),
                ("        tokens += [*tokens_b, SEP]\n", "        tokens += close(tokens_b)\n")]),
    dict(chapter="01_wordpiece", exercise="windows-solution", name="windows-itertools-count",
         why="`itertools.count(0, step)` instead of a while loop, with an early return inside the for loop",
         edits=[("#| export\ndef split_into_windows", "#| export\nimport itertools\n\n\ndef split_into_windows"),
                ("""    windows = []
    start = 0
    while True:
        windows.append(ids[start:start + size])
        if start + size >= len(ids):
            return windows
        start += step""", """    windows = []
    for start in itertools.count(0, step):  # 0, step, 2 * step, ...
        windows.append(ids[start:start + size])
        if start + size >= len(ids):
            return windows""")]),
    # ---- 02_embeddings --------------------------------------------------------------------------------------------
    dict(chapter="02_embeddings", exercise="embeddings-solution", name="leftover-import-inspect",
         why="a leftover `import inspect` (used once to read nn.Embedding's signature)",
         edits=[("#| export\nclass BertEmbeddings",
                 "#| export\nimport inspect  # I looked up nn.Embedding's arguments with inspect.signature\n\n\n"
                 "class BertEmbeddings")]),
    dict(chapter="02_embeddings", exercise="embeddings-solution", name="super-with-class-and-self",
         why="Python 2 style `super(BertEmbeddings, self).__init__()`",
         edits=[("super().__init__()", "super(BertEmbeddings, self).__init__()")]),
    dict(chapter="02_embeddings", exercise="embeddings-solution", name="docstring-call-and-nbgrader",
         why="forward's docstring mentions `__call__` and the word nbgrader",
         edits=[('"""input_ids, token_type_ids: (B, T) -> (B, T, H)."""',
                 '"""input_ids, token_type_ids: (B, T) -> (B, T, H).\n\n'
                 "        Called through nn.Module.__call__ (emb(ids), never emb.forward(ids)) so that hooks run; the\n"
                 "        nbgrader tests call it in eval mode, where dropout is the identity.\n"
                 '        """')]),
    dict(chapter="02_embeddings", exercise="embeddings-solution", name="layernorm-dropout-sequential",
         why="LayerNorm then dropout through a local `nn.Sequential` (not registered: the parameters are unchanged)",
         edits=[("return self.dropout(self.LayerNorm(x))",
                 "return nn.Sequential(self.LayerNorm, self.dropout)(x)  # the same two modules, in order")]),
    dict(chapter="02_embeddings", exercise="count-solution", name="count-config-dict",
         why="the sizes read from `config.__dict__` (a dataclass keeps its fields there)",
         edits=[("""    H = config.hidden_size
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H""",
                 """    sizes = config.__dict__  # a dataclass: its fields live in __dict__
    H = sizes["hidden_size"]
    return (sizes["vocab_size"] + sizes["max_position_embeddings"] + sizes["type_vocab_size"]) * H + 2 * H""")]),
    dict(chapter="02_embeddings", exercise="count-solution", name="count-helper-class-eq-hash",
         why="a small `class Table(object)` helper that defines `__eq__` and `__hash__`",
         edits=[("#| export\ndef embedding_parameter_count", '''#| export
class Table(object):
    """One embedding table: rows x width weights."""

    def __init__(self, rows: int, width: int):
        self.rows, self.width = rows, width

    def __eq__(self, other):
        return isinstance(other, Table) and (self.rows, self.width) == (other.rows, other.width)

    def __hash__(self):
        return hash((self.rows, self.width))

    def __repr__(self):
        return f"Table({self.rows!r}, {self.width!r})"

    def size(self) -> int:
        return self.rows * self.width


def embedding_parameter_count'''),
                ("""    H = config.hidden_size
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H""",
                 """    H = config.hidden_size
    tables = [Table(config.vocab_size, H), Table(config.max_position_embeddings, H),
              Table(config.type_vocab_size, H)]
    return sum(t.size() for t in tables) + 2 * H""")]),
    dict(chapter="02_embeddings", exercise="count-solution", name="count-leftover-gc-collect",
         why="a leftover `import gc; gc.collect()` (freed a big model while experimenting)",
         edits=[("#| export\ndef embedding_parameter_count",
                 "#| export\nimport gc\n\ngc.collect()  # free the BERT-Base I built above\n\n\n"
                 "def embedding_parameter_count")]),
    dict(chapter="02_embeddings", exercise="count-solution", name="count-helpers-in-added-cell",
         why="the answer calls helpers the student defined in a code cell added right after the answer cell",
         edits=[("""    H = config.hidden_size
    return (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * H + 2 * H""",
                 """    H = config.hidden_size
    tables = (config.vocab_size, config.max_position_embeddings, config.type_vocab_size)
    return sum(table_parameters(rows, H) for rows in tables) + layernorm_parameters(H)""")],
         added_cells=[_COUNT_HELPERS]),
    dict(chapter="02_embeddings", exercise=None, name="scratch-cell-at-the-end",
         why="a scratch cell added at the end: `from IPython.display import display`, `import inspect`",
         added_cells=["from IPython.display import display\nimport inspect\n\n"
                      "display(inspect.signature(BertEmbeddings.forward))\n"]),
    # ---- 03_attention ---------------------------------------------------------------------------------------------
    dict(chapter="03_attention", exercise="sdpa-solution", name="sdpa-einsum",
         why="`torch.einsum` instead of `@` for the scores and for the mix of values",
         edits=[("scores = query @ key.transpose(-2, -1) / math.sqrt(query.size(-1))",
                 'scores = torch.einsum("...qd,...kd->...qk", query, key) / math.sqrt(query.size(-1))'),
                ("return weights @ value, probs", 'return torch.einsum("...qk,...kd->...qd", weights, value), probs')]),
    dict(chapter="03_attention", exercise="sdpa-solution", name="sdpa-reload-math",
         why="a leftover `import importlib; importlib.reload(math)` (undid an experiment on math)",
         edits=[("#| export\ndef attention_with_probs",
                 "#| export\nimport importlib\n\nimportlib.reload(math)  # I had overwritten math.sqrt while testing\n"
                 "\n\ndef attention_with_probs")]),
    dict(chapter="03_attention", exercise="pattern-solution", name="pattern-numpy",
         why="the pattern built with numpy and returned as a torch.bool tensor (`torch.from_numpy`)",
         edits=[("#| export\ndef attention_pattern", "#| export\nimport numpy as np\n\n\ndef attention_pattern"),
                ("""    allowed = torch.ones(seq_len, seq_len, dtype=torch.bool)
    return torch.tril(allowed) if causal else allowed""",
                 """    allowed = np.ones((seq_len, seq_len), dtype=bool)
    return torch.from_numpy(np.tril(allowed) if causal else allowed)""")]),
    dict(chapter="03_attention", exercise="mha-solution", name="mha-without-fused-sdpa",
         why="no `F.scaled_dot_product_attention`: both paths use the explicit attention_with_probs",
         edits=[("""        if output_attentions:
            context, probs = attention_with_probs(q, k, v, mask, dropout_p)
        else:
            context, probs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p), None""",
                 """        context, probs = attention_with_probs(q, k, v, mask, dropout_p)  # one path, no fused kernel
        if not output_attentions:
            probs = None""")]),
    dict(chapter="03_attention", exercise="params-solution", name="params-no-grad-helper",
         why="a helper under `torch.no_grad()` (it needs no gradients) summing a list comprehension",
         edits=[("    return sum(p.numel() for p in model.parameters())",
                 '''    return _numel(model)


def _numel(module: nn.Module) -> int:
    """Entries of every parameter of `module`: nothing is computed, so no gradients are needed."""
    with torch.no_grad():
        return sum([p.numel() for p in module.parameters()])''')]),
    # ---- 04_masking -----------------------------------------------------------------------------------------------
    dict(chapter="04_masking", exercise="corrupt-solution", name="corrupt-torch-where-index",
         why="`inputs[torch.where(to_random)] = ...`: index tuples instead of a boolean mask (same draws)",
         edits=[("inputs[to_random] = random_ids[to_random]",
                 "inputs[torch.where(to_random)] = random_ids[to_random]")]),
    dict(chapter="04_masking", exercise="corrupt-solution", name="corrupt-masked-fill",
         why="`torch.Tensor.masked_fill` and `torch.where` instead of a clone and indexing (same draws)",
         edits=[("""    inputs = input_ids.clone()
    inputs[to_mask] = mask_token_id
    inputs[to_random] = random_ids[to_random]
    return inputs""", """    inputs = torch.Tensor.masked_fill(input_ids, to_mask, mask_token_id)  # a new tensor
    return torch.where(to_random, random_ids, inputs)""")]),
    dict(chapter="04_masking", exercise="counts-solution", name="counts-dataclass-print",
         why="a `dataclasses` record turned into the dict with `asdict`, and a debug `print` with `!r`",
         edits=[("#| export\ndef expected_counts", '''#| export
import dataclasses


@dataclasses.dataclass
class Split:
    targets: float
    mask: float
    random: float
    unchanged: float


def expected_counts'''),
                ('    return {"targets": targets, "mask": mask, "random": random, '
                 '"unchanged": targets - mask - random}',
                 """    split = Split(targets, mask, random, targets - mask - random)
    print(f"expected_counts({num_tokens!r}): {split!r}")  # debug output, left in
    return dataclasses.asdict(split)""")]),
    dict(chapter="04_masking", exercise="mask-tokens-solution", name="labels-masked-fill",
         why="labels with `masked_fill` instead of `torch.where`",
         edits=[("labels = torch.where(targets, input_ids, torch.full_like(input_ids, IGNORE_INDEX))",
                 "labels = input_ids.masked_fill(~targets, IGNORE_INDEX)")]),
    dict(chapter="04_masking", exercise="mask-tokens-solution", name="num-targets-assert-early-returns",
         why="an `assert` on the argument and early returns instead of one conditional expression",
         edits=[("""    if num_candidates == 0:
        return 0
    k = max(1, round(num_candidates * mlm_probability))
    return min(k, max_predictions) if max_predictions is not None else k""",
                 """    assert num_candidates >= 0, f"num_candidates must be >= 0, got {num_candidates!r}"
    if num_candidates == 0:
        return 0
    k = max(1, round(num_candidates * mlm_probability))
    if max_predictions is None:
        return k
    if k > max_predictions:
        return max_predictions
    return k""")]),
    dict(chapter="04_masking", exercise="wwm-solution", name="wwm-lru-cache-global-counter",
         why="a `functools.lru_cache` helper and a `global` call counter",
         edits=[("#| export\ndef word_ids_from_tokens", '''#| export
import functools

CALLS = 0  # how often word_ids_from_tokens ran


@functools.lru_cache(maxsize=None)
def _is_special(token: str, special_tokens: tuple) -> bool:
    return token in special_tokens and token != "[UNK]"


def word_ids_from_tokens'''),
                ("    word_ids, current = [], -1\n",
                 "    global CALLS\n    CALLS += 1\n    word_ids, current = [], -1\n"),
                ('        if token in special_tokens and token != "[UNK]":',
                 "        if _is_special(token, tuple(special_tokens)):")]),
    dict(chapter="04_masking", exercise="wwm-solution", name="wwm-timing-cell",
         why="an added cell that starts with the `%%time` cell magic and holds `%timeit x = 1` and ordinary code",
         added_cells=[_TIMING_CELL]),
    # ---- 05_data --------------------------------------------------------------------------------------------------
    dict(chapter="05_data", exercise="read-solution", name="read-logging-try-except",
         why="`logging` in the function and a `try/except OSError` around optional work (a size message)",
         edits=[("#| export\ndef read_text_file",
                 '#| export\nimport logging\n\nlog = logging.getLogger("my_data")\n\n\ndef read_text_file'),
                ("    data = path.read_bytes()\n", """    try:  # optional: how big it is, for my progress messages
        log.info("reading %s (%d bytes)", path, path.stat().st_size)
    except OSError:
        pass
    data = path.read_bytes()
""")]),
    dict(chapter="05_data", exercise="truncate-solution", name="truncate-typing-pop",
         why="`typing.List` annotations and one `pop(0 if ... else -1)` (one coin per cut, as the solution)",
         edits=[("#| export\ndef truncate_seq_pair", "#| export\nfrom typing import List\n\n\ndef truncate_seq_pair"),
                ("""        longer = tokens_a if len(tokens_a) >= len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()""", """        longer: List = tokens_a if len(tokens_a) >= len(tokens_b) else tokens_b
        longer.pop(0 if rng.random() < 0.5 else -1)""")]),
    dict(chapter="05_data", exercise="collate-solution", name="collate-numpy",
         why="the batch filled in numpy int64 arrays, then `torch.from_numpy` (torch.long tensors, same values)",
         edits=[("#| export\ndef pad_and_stack", "#| export\nimport numpy as np\n\n\ndef pad_and_stack"),
                ("""    batch = {k: torch.zeros(len(rows), T, dtype=torch.long) for k in
             ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask")}
    batch["input_ids"].fill_(pad_id)
    batch["special_tokens_mask"].fill_(1)
    for r, (row, inst) in enumerate(zip(rows, instances, strict=True)):
        n, a = len(row), len(inst.tokens_a) + 2
        batch["input_ids"][r, :n] = torch.tensor(row)
        batch["token_type_ids"][r, a:n] = 1
        batch["attention_mask"][r, :n] = 1
        batch["special_tokens_mask"][r, 1:a - 1] = 0
        batch["special_tokens_mask"][r, a:n - 1] = 0
""", """    arrays = {k: np.zeros((len(rows), T), dtype=np.int64) for k in
              ("input_ids", "token_type_ids", "attention_mask", "special_tokens_mask")}
    arrays["input_ids"][:] = pad_id
    arrays["special_tokens_mask"][:] = 1
    for r, (row, inst) in enumerate(zip(rows, instances, strict=True)):
        n, a = len(row), len(inst.tokens_a) + 2
        arrays["input_ids"][r, :n] = row
        arrays["token_type_ids"][r, a:n] = 1
        arrays["attention_mask"][r, :n] = 1
        arrays["special_tokens_mask"][r, 1:a - 1] = 0
        arrays["special_tokens_mask"][r, a:n - 1] = 0
    batch = {k: torch.from_numpy(v) for k, v in arrays.items()}
""")]),
    # ---- 06_pretraining -------------------------------------------------------------------------------------------
    dict(chapter="06_pretraining", exercise="nsp-head-solution", name="nsp-head-sequential-display",
         why="pooler and classifier chained in an `nn.Sequential`; a leftover `from IPython.display import display`",
         edits=[("#| export\ndef next_sentence_logits",
                 "#| export\nfrom IPython.display import display  # noqa: F401 (I displayed the pooled states)\n\n\n"
                 "def next_sentence_logits"),
                ("    pooled = torch.tanh(pooler_dense(sequence_output[:, 0]))  # (B, H): the [CLS] state of every "
                 "sequence\n    return seq_relationship(pooled)  # (B, 2)",
                 """    head = nn.Sequential(pooler_dense, nn.Tanh(), seq_relationship)  # the same two layers, in order
    return head(sequence_output[:, 0])  # (B, 2) from the [CLS] states""")]),
    dict(chapter="06_pretraining", exercise="accuracy-solution", name="accuracy-extra-keyword",
         why="an extra keyword argument with a default (`ignore_index=IGNORE_INDEX`)",
         edits=[("def masked_token_accuracy(prediction_logits: torch.Tensor, labels: torch.Tensor) -> float:",
                 "def masked_token_accuracy(prediction_logits: torch.Tensor, labels: torch.Tensor,\n"
                 "                          ignore_index: int = IGNORE_INDEX) -> float:"),
                ("    targets = labels != IGNORE_INDEX\n", "    targets = labels != ignore_index\n")]),
    # ---- 07_task_heads --------------------------------------------------------------------------------------------
    dict(chapter="07_task_heads", exercise="seq-cls-solution", name="seq-cls-static-class-methods",
         why="a `@staticmethod` decides the problem type, a `@classmethod` constructor, a leftover "
             "`import transformers`",
         edits=[("#| export\nclass BertForSequenceClassification",
                 "#| export\nimport transformers  # noqa: F401 (I compared with transformers' class)"
                 "\n\n\nclass BertForSequenceClassification"),
                ("        self.init_weights()\n\n    def forward(", _SEQ_CLS_METHODS),
                (_SEQ_CLS_PROBLEM, "            problem = self.problem_of(self.config, labels)")]),
    dict(chapter="07_task_heads", exercise="token-cls-solution", name="token-cls-logging-args-kwargs",
         why="`logging` in forward and an `*args, **kwargs` pass-through helper to the encoder",
         edits=[("#| export\nclass BertForTokenClassification",
                 '#| export\nimport logging\n\nlogger = logging.getLogger("token_cls")\n\n\n'
                 "class BertForTokenClassification"),
                ("""        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, output_attentions,
                        output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)""",
                 """        out = self._encode(input_ids, attention_mask, token_type_ids, position_ids,
                           output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)
        logger.debug("token classification logits %s", tuple(logits.shape))"""),
                ("        self.init_weights()\n", """        self.init_weights()

    def _encode(self, *args, **kwargs):
        return self.bert(*args, **kwargs)
""")]),
    dict(chapter="07_task_heads", exercise="align-solution", name="align-recursive-warns",
         why="recursion instead of a loop, and `warnings.warn` when there are no word labels",
         edits=[("#| export\ndef align_labels", "#| export\nimport warnings\n\n\ndef align_labels"),
                ("""    labels, previous = [], None
    for word in word_ids:
        if word is None:
            labels.append(IGNORE_INDEX)
        elif word != previous or label_all_pieces:
            labels.append(word_labels[word])
        else:
            labels.append(IGNORE_INDEX)
        previous = word
    return labels""", """    if len(word_labels) == 0:
        warnings.warn("align_labels: no word labels, every position gets -100", stacklevel=2)

    def label(i: int, previous) -> list[int]:
        if i == len(word_ids):
            return []
        word = word_ids[i]
        if word is None:
            here = IGNORE_INDEX
        elif word != previous or label_all_pieces:
            here = word_labels[word]
        else:
            here = IGNORE_INDEX
        return [here, *label(i + 1, word)]

    return label(0, None)""")]),
    dict(chapter="07_task_heads", exercise="align-solution", name="align-helper-in-cell-before",
         why="a helper defined in a code cell added right BEFORE the answer cell, `itertools.chain`, a comprehension",
         edits=[("""    labels, previous = [], None
    for word in word_ids:
        if word is None:
            labels.append(IGNORE_INDEX)
        elif word != previous or label_all_pieces:
            labels.append(word_labels[word])
        else:
            labels.append(IGNORE_INDEX)
        previous = word
    return labels""", """    before = itertools.chain([None], word_ids)  # the word of the piece before each piece
    return [label_of(word, prev, word_labels, label_all_pieces) for word, prev in zip(word_ids, before)]""")],
         added_before=[_ALIGN_HELPER]),
    dict(chapter="07_task_heads", exercise="qa-solution", name="qa-einsum",
         why="the start/end scores with `torch.einsum` on qa_outputs' weight and bias instead of calling the layer",
         edits=[("        start_logits, end_logits = self.qa_outputs(out.last_hidden_state).unbind(-1)  # (B, T) each",
                 """        weight, bias = self.qa_outputs.weight, self.qa_outputs.bias  # (2, H), (2,)
        both = torch.einsum("bth,ch->btc", out.last_hidden_state, weight) + bias  # (B, T, 2)
        start_logits, end_logits = both[..., 0], both[..., 1]  # (B, T) each""")]),
    dict(chapter="07_task_heads", exercise="span-solution", name="span-python-loops",
         why="two plain loops over start and end and a stable sort instead of a vectorised (T, T) score table",
         edits=[("""    T = start_logits.shape[0]
    scores = start_logits[:, None] + end_logits[None, :]  # (T, T): row = start, column = end
    i = torch.arange(T)
    valid = (i[:, None] <= i[None, :]) & (i[None, :] - i[:, None] < max_answer_length)
    inside = context_mask.bool()
    valid &= inside[:, None] & inside[None, :]
    flat = scores.masked_fill(~valid, float("-inf")).flatten()
    k = min(n_best, int(valid.sum()))
    top = flat.topk(k)
    return [(int(p) // T, int(p) % T, float(s)) for s, p in zip(top.values, top.indices, strict=True)]""",
                 """    T = start_logits.shape[0]
    inside = context_mask.bool().tolist()
    starts, ends = start_logits.tolist(), end_logits.tolist()
    spans = []
    for i in range(T):
        if not inside[i]:
            continue
        for j in range(i, min(T, i + max_answer_length)):
            if inside[j]:
                spans.append((i, j, starts[i] + ends[j]))
    spans.sort(key=lambda span: -span[2])  # best first; stable, so ties keep (start, end) order
    return spans[:max(n_best, 0)]""")]),
    # ---- 08_finetuning --------------------------------------------------------------------------------------------
    dict(chapter="08_finetuning", exercise="entity-f1-solution", name="entity-f1-chunk-class",
         why="entities as instances of a `class Chunk(object)` with `__eq__` and `__hash__`, kept in sets",
         edits=[("#| export metrics\ndef entity_f1", '''#| export metrics
class Chunk(object):
    """One entity of one sentence: equal when sentence, type, start and end are."""

    def __init__(self, sentence: int, kind: str, start: int, end: int):
        self.key = (sentence, kind, start, end)

    def __eq__(self, other):
        return isinstance(other, Chunk) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def entity_f1'''),
                ("""    gold: set[tuple[int, str, int, int]] = set()
    pred: set[tuple[int, str, int, int]] = set()""", """    gold: set[Chunk] = set()
    pred: set[Chunk] = set()"""),
                ("""        gold.update((n, *chunk) for chunk in bio_entities(t))
        pred.update((n, *chunk) for chunk in bio_entities(p))""",
                 """        gold.update(Chunk(n, *chunk) for chunk in bio_entities(t))
        pred.update(Chunk(n, *chunk) for chunk in bio_entities(p))""")]),
    dict(chapter="08_finetuning", exercise="word-tags-solution", name="word-tags-index-lookup",
         why="a comprehension that looks each word up with `list.index` (its first position) and a `dict` of firsts",
         edits=[(_WORD_TAGS, """    positions = list(word_ids)
    first = {w: piece_tags[positions.index(w)] for w in set(positions) - {None}}
    return [first.get(w, "O") for w in range(n_words)]""")]),
    dict(chapter="08_finetuning", exercise="word-tags-solution", name="word-tags-reversed-previous",
         why="positions walked backwards so the first piece writes last, and a check against the previous word id",
         edits=[(_WORD_TAGS, """    tags = ["O" for _ in range(n_words)]
    for position in reversed(range(len(word_ids))):
        word = word_ids[position]
        previous = word_ids[position - 1] if position > 0 else None
        if word is not None and word != previous:  # the word's first piece
            tags[word] = str(piece_tags[position])
    return tags""")]),
    dict(chapter="08_finetuning", exercise="squad-solution", name="squad-translate-counter",
         why="`str.translate` drops the punctuation; the overlap summed from a `collections.Counter` by hand",
         edits=[('    text = "".join(ch for ch in s.lower() if ch not in _PUNCTUATION)\n',
                 '    text = s.lower().translate(str.maketrans("", "", string.punctuation))\n'),
                ("    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())\n",
                 "    gold_counts = collections.Counter(gold_tokens)\n"
                 "    same = sum(min(n, gold_counts[w]) for w, n in collections.Counter(pred_tokens).items())\n"),
                ("#| export metrics\n_ARTICLES", "#| export metrics\nimport collections\n\n_ARTICLES")]),
    # ---- 09_base_pretraining --------------------------------------------------------------------------------------
    dict(chapter="09_base_pretraining", exercise="flops-solution", name="flops-math-fsum",
         why="the total added with `math.fsum` (an exactly rounded sum)",
         edits=[("#| export\ndef flops_per_token", "#| export\nimport math\n\n\ndef flops_per_token"),
                ("    return 6 * (encoder + mlm_head + nsp_head) + 12 * L * H * seq_len",
                 "    return math.fsum([6 * encoder, 6 * mlm_head, 6 * nsp_head, 12 * L * H * seq_len])")]),
    dict(chapter="09_base_pretraining", exercise="flops-solution", name="mfu-early-return-keyword",
         why="an early `return None`, and an extra keyword-only argument with a default (`percent=False`)",
         edits=[("def mfu(tokens_per_second: float, flops_per_token: float, peak: float | None) -> float | None:",
                 "def mfu(tokens_per_second: float, flops_per_token: float, peak: float | None, *,\n"
                 "        percent: bool = False) -> float | None:"),
                ("    return tokens_per_second * flops_per_token / peak if peak else None",
                 """    if not peak:
        return None  # the device's peak is not known
    share = tokens_per_second * flops_per_token / peak
    return 100 * share if percent else share""")]),
    # ---- 10_beyond_bert -------------------------------------------------------------------------------------------
    dict(chapter="10_beyond_bert", exercise="replace-solution", name="replace-nonzero-as-tuple",
         why="`corrupted[torch.nonzero(targets, as_tuple=True)] = samples`: index tuples, row-major as the mask",
         edits=[("corrupted[targets] = samples", "corrupted[torch.nonzero(targets, as_tuple=True)] = samples")]),
    dict(chapter="10_beyond_bert", exercise="electra-loss-solution", name="electra-loss-sys-version-assert",
         why="a leftover `import sys; print(sys.version)` and an `assert` on the shapes inside the function",
         edits=[("#| export\ndef electra_loss",
                 "#| export\nimport sys\n\nprint(sys.version)  # which Python is this kernel?\n\n\ndef electra_loss"),
                ("    real = attention_mask.bool()  # (B, T)\n",
                 "    assert discriminator_logits.shape == is_replaced.shape, (discriminator_logits.shape, "
                 "is_replaced.shape)\n    real = attention_mask.bool()  # (B, T)\n")]),
    dict(chapter="10_beyond_bert", exercise="compare-solution", name="compare-comprehension-display",
         why="the table built with a dict comprehension over `zip`, shown with `from IPython.display import display`",
         source=_COMPARISON),
    dict(chapter="10_beyond_bert", exercise="statements-solution", name="statements-generator-expression",
         why="`dict(...)` of a generator expression with f-string keys",
         source=_STATEMENTS),
    dict(chapter="10_beyond_bert", exercise="quiz-solution", name="quiz-simplenamespace",
         why="`import types; types.SimpleNamespace(...)`, turned into the dict with `vars`",
         source=_QUIZ),
]


def variants(chapter: str | None = None) -> list[Variant]:
    """The catalogue as Variants (all chapters, or one); stops with the reason when an entry is malformed."""
    out = []
    for entry in VARIANTS:
        v = Variant(entry["chapter"], entry.get("exercise"), entry["name"], entry["why"],
                    [tuple(e) for e in entry.get("edits", [])], entry.get("source"),
                    list(entry.get("added_cells", [])), list(entry.get("added_before", [])))
        out.append(v)
    names = [v.name for v in out]
    bad = [n for n in names if not mutation._NAME.match(n) or names.count(n) > 1]
    if bad:
        raise SystemExit(f"autograder/honest.py: variant names must be unique and [a-z0-9-]+: {sorted(set(bad))}")
    for v in out:
        if v.chapter not in mutation.chapters():
            raise SystemExit(f"honest variant {v.name}: no chapter {v.chapter!r}")
        if v.edits and v.source is not None:
            raise SystemExit(f"honest variant {v.name}: give edits or source, not both")
        if not (v.edits or v.source is not None or v.added_cells or v.added_before):
            raise SystemExit(f"honest variant {v.name}: changes nothing")
        if v.exercise is None and (v.edits or v.source is not None or v.added_before):
            raise SystemExit(f"honest variant {v.name}: without an exercise it can only add cells at the end")
    return [v for v in out if chapter is None or v.chapter == chapter]


# ---- building the notebooks -------------------------------------------------------------------------------------


def answer(variant: Variant, solution_source: str) -> str:
    """The variant's answer cell: the solution cell with the edits (each `old` exactly once), or its source."""
    if variant.source is not None:
        return variant.source
    source = solution_source
    for old, new in variant.edits:
        count = source.count(old)
        if count != 1:
            raise SystemExit(f"honest variant {variant.chapter}/{variant.name}: {old[:80]!r} occurs {count} times "
                             f"in {variant.exercise} (must be exactly once): update autograder/honest.py to the "
                             "current solution.")
        if old == new:
            raise SystemExit(f"honest variant {variant.chapter}/{variant.name}: an edit changes nothing")
        source = source.replace(old, new)
    return source


def _with_variant(nb, variant: Variant, strip: bool):
    """`nb` with the variant's answer in its exercise cell and its added cells (fresh ids, no nbgrader metadata)."""
    from minibert_course.export import strip_solution_markers

    cells = list(nb.cells)
    if variant.exercise is None:
        nb.cells = cells + [nbformat.v4.new_code_cell(s) for s in variant.added_cells]
        return nb
    at = [i for i, c in enumerate(cells) if c.metadata.get("nbgrader", {}).get("grade_id") == variant.exercise
          and c.metadata["nbgrader"].get("solution")]
    if len(at) != 1:
        raise SystemExit(f"honest variant {variant.chapter}/{variant.name}: no solution cell {variant.exercise!r}")
    solution = mutation.solution_cells(nbformat.read(ROOT / "solutions" / f"{variant.chapter}.ipynb",
                                                     as_version=4))[variant.exercise].source
    i = at[0]
    source = answer(variant, solution)
    cells[i].source = strip_solution_markers(source) if strip else source
    before = [nbformat.v4.new_code_cell(s) for s in variant.added_before]
    after = [nbformat.v4.new_code_cell(s) for s in variant.added_cells]
    nb.cells = cells[:i] + before + [cells[i]] + after + cells[i + 1:]
    return nb


def submission(variant: Variant) -> nbformat.NotebookNode:
    """What the student hands in: the released notebook answered with the solutions (markers dropped), the
    variant's answer in its cell and its added cells put in (fresh cell ids, no nbgrader metadata)."""
    return _with_variant(mutation.submission(variant.chapter, None), variant, strip=True)


def solution_notebook(variant: Variant) -> nbformat.NotebookNode:
    """The solution notebook (hidden tests in place) with the variant's answer and added cells: for --check."""
    return _with_variant(nbformat.read(ROOT / "solutions" / f"{variant.chapter}.ipynb", as_version=4), variant,
                         strip=False)


# ---- the proof of correctness: a plain Jupyter kernel ----------------------------------------------------------


@dataclass
class Check:
    variant: Variant
    passed: bool
    failed_tests: list[str]
    errors: list[str]  # other cells that raised: "cell N: ExceptionName: message"
    seconds: float


def _jupyter_env(base: Path) -> None:
    for var, sub in [("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_DATA_DIR", "data"), ("IPYTHONDIR", "ipython"),
                     ("MPLCONFIGDIR", "matplotlib")]:
        os.environ.setdefault(var, str(base / sub))
        Path(os.environ[var]).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")


def check(variant: Variant, timeout: int = 600) -> Check:
    """Run the variant's solution notebook top to bottom in a fresh python3 kernel (nbclient), in a scratch folder,
    with the export cell writing into that folder (MINIBERT_EXPORT_DIR), never into the package."""
    from nbclient import NotebookClient

    nb = solution_notebook(variant)
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix=f"honest-{variant.name}-"))
    try:
        path = work / f"{variant.chapter}.ipynb"
        nbformat.write(nb, path)
        saved = os.environ.get("MINIBERT_EXPORT_DIR")
        os.environ["MINIBERT_EXPORT_DIR"] = str(work / "export")
        try:
            NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(work)}}).execute()
        finally:
            if saved is None:
                os.environ.pop("MINIBERT_EXPORT_DIR", None)
            else:
                os.environ["MINIBERT_EXPORT_DIR"] = saved
    finally:
        shutil.rmtree(work, ignore_errors=True)
    failed, errors = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        bad = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not bad:
            continue
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and not meta.get("solution"):
            failed.append(meta["grade_id"])
        else:
            where = meta.get("grade_id") or ("an added cell" if not meta else "a given cell")
            errors.append(f"cell {index} ({where}): {bad[0].get('ename')}: {str(bad[0].get('evalue'))[:200]}")
    return Check(variant, not failed and not errors, failed, errors, time.perf_counter() - start)


def _check_one(args: tuple[Variant, str]) -> Check:
    variant, base = args
    _jupyter_env(Path(base))
    return check(variant)


def run_checks(selected: list[Variant], jobs: int = 1) -> list[Check]:
    base = ROOT / "build" / "honest-jupyter"
    _jupyter_env(base)
    results: list[Check] = []
    if jobs <= 1:
        for v in selected:
            results.append(check(v))
            _print_check(results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for result in pool.map(_check_one, [(v, str(base)) for v in selected]):
            results.append(result)
            _print_check(result)
    return results


def _print_check(c: Check) -> None:
    what = "passed" if c.passed else "FAILED " + ", ".join(c.failed_tests + c.errors)
    print(f"  {c.variant.chapter:20s} {c.variant.name:36s} {c.seconds:6.1f} s  {what}", flush=True)


def check_table(results: list[Check]) -> str:
    lines = ["| chapter | variant | exercise | style | plain kernel: every test passes |", "|---|---|---|---|---|"]
    for c in results:
        v = c.variant
        verdict = "yes" if c.passed else "NO: " + ", ".join(f"`{t}`" for t in c.failed_tests + c.errors)
        lines.append(f"| {v.chapter} | `{v.name}` | `{v.exercise or '(added cell)'}` | {v.why} | {verdict} |")
    return "\n".join(lines) + "\n"


# ---- grading: outcomes, the table -------------------------------------------------------------------------------


def outcomes(report, chapter: str) -> dict[str, mutation.Outcome]:
    """Outcomes of the control and of the chapter's variants in a grade.grade report (the class run's, or
    grade_alone's), keyed by CONTROL and Variant.student."""
    ids = {"control": CONTROL} | {v.student: v.student for v in variants(chapter)}
    got = mutation.outcomes_from(report, chapter, ids)
    for row in report.rows:  # flagged for review but graded normally: shown, costs nothing
        key = ids.get(row["student"]) if row["assignment"] == chapter else None
        if key in got and not got[key].problem and row.get("review"):
            got[key].problem = f"for review (graded): {row['review']}"
    return got


def verdict(chapter: str, got: dict[str, mutation.Outcome]) -> list[str]:
    """Every variant keeps the control's score, which is the chapter's full autograded points."""
    problems = []
    control = got.get(CONTROL)
    full = sum(mutation.points(chapter).values())
    if control is None or control.score is None or control.score < full:
        problems.append(f"{chapter}: the control (solutions) scored {control.score if control else None} of {full}")
    for v in variants(chapter):
        o = got.get(v.student)
        if o is None or o.score is None:
            problems.append(f"{v.student}: not graded ({o.problem if o else 'missing from the report'})")
        elif o.score < full:
            problems.append(f"{v.student} ({v.why}) lost {full - o.score:g} of {full:g} points; failing "
                            f"{', '.join(o.failed) or '?'}" + (f"; flagged: {o.problem}" if o.problem else ""))
    return problems


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(chapter: str, got: dict[str, mutation.Outcome]) -> list[str]:
    control = got.get(CONTROL)
    lines = [f"### {chapter}", "",
             f"Control (the solutions): {control.score:g}/{control.max_score:g}." if control and control.score
             is not None else "Control: NOT GRADED", "",
             "| exercise | variant | honest style | score | failing tests | flagged (reason) |",
             "|---|---|---|---|---|---|"]
    for v in variants(chapter):
        o = got.get(v.student)
        exercise = f"`{v.exercise}`" if v.exercise else "(added cell)"
        if o is None or o.score is None:
            why = _cell(o.problem if o else "")
            lines.append(f"| {exercise} | `{v.name}` | {_cell(v.why)} | not graded | | {why} |")
            continue
        lines.append(f"| {exercise} | `{v.name}` | {_cell(v.why)} | {o.score:g}/{o.max_score:g} | "
                     f"{', '.join(f'`{g}`' for g in o.failed)} | {_cell(o.problem)} |")
    return lines


def document(report) -> str:
    chosen = sorted({v.chapter for v in variants()})
    lines = ["# The honest suite", "",
             "Generated by tests/course/test_honest.py from the suite's class run (autograder/honest.py; `python -m "
             "autograder.honest --grade DIR --table docs/honest.md` grades the same submissions alone). Each row "
             "is a correct answer written in a style real students use, proven correct by running the solution "
             "notebook with it, hidden tests included, in a plain Jupyter kernel (`python -m autograder.honest "
             "--check`); graded by the real `nbgrader autograde`, every one must keep the control's full marks.", ""]
    for chapter in chosen:
        lines += table(chapter, outcomes(report, chapter)) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def grade_alone(work: Path, chapters: list[str] | None, jobs: int, cell_timeout: int = 60):
    """Grade the variants (and the control of each of their chapters) for real, in `work`."""
    from autograder import grade

    shutil.rmtree(work, ignore_errors=True)
    drop = work / "drop"
    selected = [v for v in variants() if chapters is None or v.chapter in chapters]
    for chapter in sorted({v.chapter for v in selected}):
        folder = drop / "control"
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(mutation.submission(chapter, None), folder / f"{chapter}.ipynb")
    for v in selected:
        folder = drop / v.student
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(submission(v), folder / f"{v.chapter}.ipynb")
    return grade.grade(work / "course", drop, None, jobs=jobs, cell_timeout=cell_timeout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.honest", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="prove every variant correct in a plain kernel")
    parser.add_argument("--grade", type=Path, metavar="DIR", help="grade the variants for real in DIR")
    parser.add_argument("--list", action="store_true", help="list the variants")
    parser.add_argument("--chapter", action="append", help="chapters (default: all)")
    parser.add_argument("--name", action="append", help="only these variants (--check)")
    parser.add_argument("--jobs", type=int, default=1, help="parallel kernels (--check) or grading workers")
    parser.add_argument("--table", type=Path, help="write the markdown table here")
    args = parser.parse_args(argv)
    selected = [v for v in variants() if (not args.chapter or v.chapter in args.chapter)
                and (not args.name or v.name in args.name)]
    if args.list or not (args.check or args.grade):
        for v in selected:
            print(f"{v.chapter:20s} {v.name:36s} {v.exercise or '(added cell)':24s} {v.why}")
        print(f"{len(selected)} variants in {len({v.chapter for v in selected})} chapters")
        return 0
    status = 0
    if args.check:
        for v in selected:  # build every notebook first: a stale edit stops here, before any kernel starts
            submission(v)
            solution_notebook(v)
        print(f"checking {len(selected)} variants in a plain Jupyter kernel", flush=True)
        results = run_checks(selected, args.jobs)
        text = check_table(results)
        print(text)
        if args.table and not args.grade:
            args.table.parent.mkdir(parents=True, exist_ok=True)
            args.table.write_text(text, encoding="utf-8")
        failed = [c.variant.name for c in results if not c.passed]
        print(f"{len(results) - len(failed)}/{len(results)} variants pass every test in a plain kernel"
              + (f"; FAILED: {failed}" if failed else ""))
        status |= bool(failed)
    if args.grade:
        report = grade_alone(args.grade, args.chapter, args.jobs)
        text = document(report)
        print(text)
        if args.table:
            args.table.parent.mkdir(parents=True, exist_ok=True)
            args.table.write_text(text, encoding="utf-8")
        problems = [p for ch in sorted({v.chapter for v in selected}) for p in verdict(ch, outcomes(report, ch))]
        if problems:
            print("PROBLEMS:\n  " + "\n  ".join(problems), file=sys.stderr)
            status = 1
        else:
            print("every honest variant keeps full marks")
    return status


if __name__ == "__main__":
    sys.exit(main())
