"""Tests of `minibert.tokenization`, in the style of Google BERT's tokenization_test.py.

Tiny hand-written vocabularies with exact expected pieces and ids, one edge case per test; on real text the
reference is Hugging Face `tokenizers` with bert-base-uncased's own tokenizer.json.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from minibert.corpus import load_wikipedia_sample
from minibert.tokenization import (
    MAX_POSITIONS,
    SPECIAL_TOKENS,
    BasicTokenizer,
    BertTokenizer,
    WordPieceTokenizer,
    build_inputs,
    in_stable_order,
    load_vocab,
    pretrained_dir,
    pretrained_vocab_file,
    save_vocab,
    split_into_windows,
    train_wordpiece,
)

# The vocabulary of Google BERT's test_wordpiece_tokenizer.
REFERENCE_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing"]
# A lecture vocabulary that, unlike bert-base-uncased, holds the continuation "##happiness".
LECTURE_VOCAB = [*SPECIAL_TOKENS, "un", "##happiness", "##happy", "happiness", "##ha", "##ness"]
# REFERENCE_VOCAB completed with the two specials it lacks, so that BertTokenizer accepts it.
FULL_VOCAB = ["[PAD]", *REFERENCE_VOCAB, "[MASK]"]


@pytest.fixture(scope="module")
def bert() -> BertTokenizer:
    return BertTokenizer.from_pretrained()


@pytest.fixture(scope="module")
def reference() -> Tokenizer:
    """bert-base-uncased's own `tokenizers` pipeline, without the truncation and padding its file sets."""
    tok = Tokenizer.from_file(str(pretrained_dir() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def wiki_paragraphs() -> list[str]:
    return [p for article in load_wikipedia_sample(limit=10) for p in article.paragraphs]


def reference_basic(text: str, lowercase: bool = True) -> list[str]:
    """Words of `text` by `tokenizers`' BertNormalizer + BertPreTokenizer."""
    normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    return [word for word, _ in pre_tokenizers.BertPreTokenizer().pre_tokenize_str(normalizer.normalize_str(text))]


def reference_wordpiece(vocab: list[str], text: str, max_input_chars_per_word: int = 100) -> list[str]:
    """Pieces of whitespace-separated `text` by `tokenizers`' own WordPiece model over `vocab`."""
    model = models.WordPiece(
        {t: i for i, t in enumerate(vocab)}, unk_token="[UNK]", max_input_chars_per_word=max_input_chars_per_word
    )
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return tok.encode(text).tokens


# --- WordPieceTokenizer -----------------------------------------------------------------------------------------


def test_wordpiece_splits_known_words_into_longest_pieces():
    tok = WordPieceTokenizer(REFERENCE_VOCAB)
    assert tok.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]


def test_wordpiece_word_with_unspellable_tail_becomes_one_unk():
    tok = WordPieceTokenizer(REFERENCE_VOCAB)
    # "unwantedX": un ##want ##ed match, but nothing spells "X", so the whole word is [UNK] (not a partial split).
    assert tok.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_wordpiece_empty_and_blank_text_give_no_pieces():
    tok = WordPieceTokenizer(REFERENCE_VOCAB)
    assert tok.tokenize("") == []
    assert tok.tokenize(" \t\n ") == []


def test_wordpiece_prefers_longest_prefix_over_shorter_one():
    # "wa" and "want" both start "wanted": the longest match "want" wins, then "##ed".
    assert WordPieceTokenizer(REFERENCE_VOCAB).tokenize("wanted") == ["want", "##ed"]


def test_wordpiece_max_input_chars_per_word_boundary():
    tok = WordPieceTokenizer(REFERENCE_VOCAB, max_input_chars_per_word=6)
    assert tok.tokenize("unwant") == ["un", "##want"]  # 6 characters: still split
    assert tok.tokenize("unwanted") == ["[UNK]"]  # 8 characters: unknown at once
    assert tok.tokenize("unwant unwanted running") == reference_wordpiece(REFERENCE_VOCAB, "unwant unwanted running", 6)



def test_wordpiece_default_limit_counts_up_to_100_characters():
    tok = WordPieceTokenizer(REFERENCE_VOCAB)
    exactly_100, over_100 = "want" * 25, "running" + "want" * 23 + "ed"  # both could be spelled
    assert len(exactly_100) == 100 and len(over_100) == 101
    assert tok.tokenize(exactly_100) == ["want"] + ["##want"] * 24
    assert tok.tokenize(over_100) == ["[UNK]"]
    text = f"{exactly_100} {over_100}"
    assert tok.tokenize(text) == reference_wordpiece(REFERENCE_VOCAB, text)

def test_wordpiece_custom_unk_token():
    tok = WordPieceTokenizer({**{t: i for i, t in enumerate(REFERENCE_VOCAB)}, "<unk>": 10}, unk_token="<unk>")
    assert tok.tokenize("xyz want") == ["<unk>", "want"]


def test_wordpiece_matches_tokenizers_wordpiece_model():
    text = "unwanted running unwantedX wa want wants runnin un ##ing"
    assert WordPieceTokenizer(REFERENCE_VOCAB).tokenize(text) == reference_wordpiece(REFERENCE_VOCAB, text)


def test_unhappiness_with_lecture_vocab_uses_whole_continuation():
    # Greedy: longest prefix of "unhappiness" in the vocab is "un", then the longest "##" piece is "##happiness".
    assert WordPieceTokenizer(LECTURE_VOCAB).tokenize("unhappiness") == ["un", "##happiness"]


def test_unhappiness_with_real_vocab(bert, reference):
    assert "##happiness" not in bert.vocab
    assert bert.tokenize("unhappiness") == ["un", "##ha", "##pp", "##iness"]
    assert bert.tokenize("unhappiness") == reference.encode("unhappiness", add_special_tokens=False).tokens


# --- BasicTokenizer ---------------------------------------------------------------------------------------------


def test_basic_lower_cases_and_splits_whitespace():
    assert BasicTokenizer().tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]


def test_basic_strips_accents_when_lower_casing():
    assert BasicTokenizer().tokenize("H\u00e9llo Cr\u00e8me br\u00fbl\u00e9e") == ["hello", "creme", "brulee"]


def test_basic_without_lower_case_keeps_case_and_accents():
    tok = BasicTokenizer(do_lower_case=False)
    assert tok.tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert tok.tokenize("H\u00e9llo") == ["H\u00e9llo"]


def test_basic_splits_ascii_and_unicode_punctuation():
    assert BasicTokenizer().tokenize("$5^a") == ["$", "5", "^", "a"]
    assert BasicTokenizer().tokenize("don't...") == ["don", "'", "t", ".", ".", "."]
    assert BasicTokenizer().tokenize("\u00abx\u00bb \u2014y") == ["\u00ab", "x", "\u00bb", "\u2014", "y"]


def test_basic_isolates_cjk_ideographs():
    assert BasicTokenizer().tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]


def test_basic_drops_control_characters():
    # NUL, BEL, U+FFFD and the zero-width space (format char) vanish without splitting the word.
    assert BasicTokenizer().tokenize("a\x00b\x07c\ufffdd\u200be f") == ["abcde", "f"]


def test_basic_treats_unicode_spaces_as_whitespace():
    assert BasicTokenizer().tokenize("a\u00a0b\u3000c\rd") == ["a", "b", "c", "d"]


def test_basic_lower_cases_final_sigma_character_by_character():
    # Python's str.lower() gives the final form "ς"; BERT and `tokenizers` lower-case each character, giving "σ".
    assert BasicTokenizer().tokenize("\u039f\u0394\u039f\u03a3") == ["\u03bf\u03b4\u03bf\u03c3"]
    assert BasicTokenizer().tokenize("\u039f\u0394\u039f\u03a3") == reference_basic("\u039f\u0394\u039f\u03a3")


def test_basic_matches_tokenizers_on_mixed_text():
    text = "Héllo, WORLD! 你好 naïve\tcafé — «quotes» 3.14% ΟΔΟΣ a\u00a0b x\x00y İstanbul ǅ"
    assert BasicTokenizer().tokenize(text) == reference_basic(text)
    assert BasicTokenizer(do_lower_case=False).tokenize(text) == reference_basic(text, lowercase=False)


# --- BertTokenizer against tokenizers on real text -----------------------------------------------------------------


def test_bert_tokenize_matches_tokenizers_on_wikipedia(bert, reference, wiki_paragraphs):
    assert len(wiki_paragraphs) > 100
    mismatches = []
    for p in wiki_paragraphs:
        expected = reference.encode(p, add_special_tokens=False).tokens
        got = bert.tokenize(p)
        if got != expected:
            mismatches.append((p[:80], got[:20], expected[:20]))
    assert not mismatches, f"{len(mismatches)} of {len(wiki_paragraphs)} paragraphs differ; first: {mismatches[0]}"


def test_bert_ids_match_tokenizers_on_wikipedia(bert, reference, wiki_paragraphs):
    for p in wiki_paragraphs[:200]:
        assert bert.convert_tokens_to_ids(bert.tokenize(p)) == reference.encode(p, add_special_tokens=False).ids, p


def test_bert_special_token_ids_match_real_vocab(bert, reference):
    assert [bert.vocab[t] for t in SPECIAL_TOKENS] == [0, 100, 101, 102, 103]
    assert [bert.vocab[t] for t in SPECIAL_TOKENS] == [reference.token_to_id(t) for t in SPECIAL_TOKENS]
    assert len(bert) == reference.get_vocab_size() == 30522


def test_convert_unknown_token_to_unk_id():
    tok = BertTokenizer(FULL_VOCAB)
    assert tok.convert_tokens_to_ids(["want", "nope", "##ing"]) == [4, 1, 10]
    assert tok.convert_ids_to_tokens([8, 5, 6]) == ["un", "##want", "##ed"]


# --- build_inputs and encode --------------------------------------------------------------------------------------


def test_build_inputs_single():
    assert build_inputs(["a", "b"]) == (["[CLS]", "a", "b", "[SEP]"], [0, 0, 0, 0])


def test_build_inputs_pair_segments():
    tokens, segments = build_inputs(["a", "b"], ["c"])
    assert tokens == ["[CLS]", "a", "b", "[SEP]", "c", "[SEP]"]
    assert segments == [0, 0, 0, 0, 1, 1]


def test_build_inputs_empty_segments():
    assert build_inputs([]) == (["[CLS]", "[SEP]"], [0, 0])
    assert build_inputs([], []) == (["[CLS]", "[SEP]", "[SEP]"], [0, 0, 1])



def test_build_inputs_empty_pair_is_a_segment():
    assert build_inputs(["a"], []) == (["[CLS]", "a", "[SEP]", "[SEP]"], [0, 0, 0, 1])


def test_build_inputs_returns_new_lists():
    a, b = ["x", "y"], ["z"]
    tokens, segments = build_inputs(a, b)
    assert a == ["x", "y"] and b == ["z"]
    assert type(tokens) is list and type(segments) is list
    assert build_inputs(("a",), ("b",)) == (["[CLS]", "a", "[SEP]", "b", "[SEP]"], [0, 0, 0, 1, 1])

def test_build_inputs_matches_tokenizers_pair_encoding(reference, wiki_paragraphs):
    a, b = wiki_paragraphs[0], wiki_paragraphs[1]
    pieces_a = reference.encode(a, add_special_tokens=False).tokens
    pieces_b = reference.encode(b, add_special_tokens=False).tokens
    single = reference.encode(a)
    pair = reference.encode(a, b)
    assert build_inputs(pieces_a) == (single.tokens, single.type_ids)
    assert build_inputs(pieces_a, pieces_b) == (pair.tokens, pair.type_ids)


def test_encode_single_with_hand_vocab():
    enc = BertTokenizer(FULL_VOCAB)("UNwanted, running")
    # "," is not in the vocabulary: [UNK].
    assert enc.tokens == ["[CLS]", "un", "##want", "##ed", "[UNK]", "runn", "##ing", "[SEP]"]
    assert enc.input_ids == [2, 8, 5, 6, 1, 9, 10, 3]
    assert enc.token_type_ids == [0] * 8
    assert enc.attention_mask == [1] * 8


def test_encode_pair_matches_tokenizers(bert, reference, wiki_paragraphs):
    short = [p for p in wiki_paragraphs if len(reference.encode(p, add_special_tokens=False).ids) < 200]
    assert len(short) >= 6
    for a, b in zip(short[0:6:2], short[1:6:2], strict=True):
        enc = bert(a, b)
        expected = reference.encode(a, b)
        assert enc.tokens == expected.tokens
        assert enc.input_ids == expected.ids
        assert enc.token_type_ids == expected.type_ids
        assert enc.attention_mask == [1] * len(expected.ids) == expected.attention_mask


def test_encode_fills_exactly_512_positions(bert):
    assert bert.tokenize("word") == ["word"]
    enc = bert(" ".join(["word"] * (MAX_POSITIONS - 2)))
    assert len(enc.input_ids) == MAX_POSITIONS


def test_encode_longer_than_512_positions_raises(bert):
    with pytest.raises(ValueError, match="split_into_windows"):
        bert(" ".join(["word"] * (MAX_POSITIONS - 1)))
    with pytest.raises(ValueError, match="split_into_windows"):
        bert(" ".join(["word"] * 300), " ".join(["word"] * 300))


# --- split_into_windows -----------------------------------------------------------------------------------------


def test_windows_of_1200_items():
    items = list(range(1200))
    windows = split_into_windows(items, max_length=512, stride=128)
    # 510 items per window, advancing by 510 - 128 = 382: starts 0, 382, 764; the last reaches the end.
    assert windows == [items[0:510], items[382:892], items[764:1200]]
    for left, right in zip(windows, windows[1:], strict=False):
        assert left[-128:] == right[:128]


def test_windows_cover_everything_in_order():
    items = [f"t{i}" for i in range(2000)]
    windows = split_into_windows(items, max_length=100, stride=10)
    assert all(len(w) <= 98 for w in windows)
    rebuilt = windows[0] + [x for w in windows[1:] for x in w[10:]]
    assert rebuilt == items


def test_windows_match_tokenizers_overflow_with_stride():
    tok = Tokenizer.from_file(str(pretrained_dir() / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(max_length=512, stride=128)
    enc = tok.encode(" ".join(["word"] * 1200))
    expected = [[w for w in e.word_ids if w is not None] for e in [enc, *enc.overflowing]]
    assert split_into_windows(list(range(1200)), max_length=512, stride=128) == expected


def test_windows_short_input_is_one_window():
    assert split_into_windows([1, 2, 3]) == [[1, 2, 3]]
    assert split_into_windows(list(range(510))) == [list(range(510))]
    assert len(split_into_windows(list(range(511)))) == 2


def test_windows_empty_input():
    assert split_into_windows([]) == [[]]



def test_windows_ending_exactly_at_a_window_get_no_extra_window():
    assert split_into_windows(list(range(892))) == [list(range(510)), list(range(382, 892))]
    windows = split_into_windows(list(range(20)), max_length=7, stride=0)
    assert windows == [list(range(i, i + 5)) for i in (0, 5, 10, 15)]


def test_windows_are_lists_whatever_the_input():
    assert split_into_windows("abcdefghij", max_length=6, stride=2) == [list("abcd"), list("cdef"), list("efgh"),
                                                                         list("ghij")]
    assert split_into_windows((1, 2)) == [[1, 2]]

@pytest.mark.parametrize("stride", [-1, 510, 600])
@pytest.mark.parametrize("n", [10, 1000])
def test_windows_invalid_stride(stride, n):
    with pytest.raises(ValueError, match="stride"):
        split_into_windows(list(range(n)), max_length=512, stride=stride)


# --- vocabularies -----------------------------------------------------------------------------------------------


def test_load_vocab_from_file_and_list(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(t + "\n" for t in REFERENCE_VOCAB), encoding="utf-8")
    expected = {t: i for i, t in enumerate(REFERENCE_VOCAB)}
    assert load_vocab(path) == expected
    assert load_vocab(str(path)) == expected
    assert load_vocab(REFERENCE_VOCAB) == expected


def test_load_vocab_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_vocab(tmp_path / "no_such_vocab.txt")


def test_load_vocab_duplicate_token_is_named(tmp_path):
    with pytest.raises(ValueError, match="'##want'"):
        load_vocab(["[UNK]", "##want", "un", "##want"])
    path = tmp_path / "vocab.txt"
    path.write_text("[UNK]\nrunn\nrunn\n", encoding="utf-8")
    with pytest.raises(ValueError, match="'runn'"):
        load_vocab(path)


def test_load_vocab_empty(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        load_vocab([])
    path = tmp_path / "vocab.txt"
    path.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="empty"):
        load_vocab(path)


def test_bert_tokenizer_requires_special_tokens():
    with pytest.raises(ValueError) as info:
        BertTokenizer(REFERENCE_VOCAB)
    message = str(info.value)
    assert "[PAD]" in message and "[MASK]" in message
    assert "[CLS]" not in message and "[SEP]" not in message


def test_decode_glues_continuation_pieces():
    tok = BertTokenizer(FULL_VOCAB)
    ids = [2, 8, 5, 6, 9, 10, 3]  # [CLS] un ##want ##ed runn ##ing [SEP]
    assert tok.decode(ids) == "unwanted running"
    assert tok.decode(ids, skip_special_tokens=False) == "[CLS] unwanted running [SEP]"


def test_decode_round_trips_real_text(bert):
    text = "the unhappiness of running words"
    assert bert.decode(bert.encode(text)) == text


def test_train_wordpiece_and_save_vocab(tmp_path):
    texts = ["The cat sat on the mat.", "The dog sat on the log.", "Cats and dogs are playing together."] * 4
    trained = train_wordpiece(texts, vocab_size=200, min_frequency=1)
    assert [trained.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    path = save_vocab(trained, tmp_path / "vocab.txt")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:5] == list(SPECIAL_TOKENS)
    assert len(lines) == trained.get_vocab_size()
    assert {t: i for i, t in enumerate(lines)} == trained.get_vocab()
    tok = BertTokenizer(path)
    assert len(tok) == trained.get_vocab_size()
    for text in [*texts[:3], "Unseen catsdogs!"]:
        assert tok.tokenize(text) == trained.encode(text).tokens



@pytest.fixture(scope="module")
def trained_on_wikipedia(wiki_paragraphs):
    return train_wordpiece(wiki_paragraphs, vocab_size=2000)


def test_train_wordpiece_normalizes_and_pre_tokenizes_like_bert(trained_on_wikipedia):
    def pieces(text):
        return trained_on_wikipedia.encode(text, add_special_tokens=False).tokens

    punctuation = [t for t in pieces("well...done, history.") if not t[-1].isalpha()]
    assert punctuation == [".", ".", ".", ",", "."]  # every punctuation character is a word of its own
    assert "".join(t.removeprefix("##") for t in pieces("Café Naïve")) == "cafenaive"
    assert len(trained_on_wikipedia.get_vocab()) == 2000


def test_train_wordpiece_min_frequency_and_case(wiki_paragraphs):
    rare = train_wordpiece(wiki_paragraphs[:200], vocab_size=2000, min_frequency=10**6).get_vocab()
    assert all(len(t.removeprefix("##")) == 1 for t in rare if t not in SPECIAL_TOKENS)  # nothing merged
    cased = train_wordpiece(wiki_paragraphs[:200], vocab_size=800, lowercase=False)
    assert cased.encode("The", add_special_tokens=False).tokens[0].startswith("T")

def test_pretrained_vocab_file():
    path = pretrained_vocab_file()
    assert path.is_file()
    assert path == pretrained_dir() / "vocab.txt"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 30522
    assert [lines[i] for i in (0, 100, 101, 102, 103)] == list(SPECIAL_TOKENS)


# --- casing from the folder's tokenizer_config.json, against transformers -----------------------------------------
# A cased model read as uncased turns "Paris" into "paris": wrong ids and no error. `BertTokenizer.from_pretrained`
# must read do_lower_case, strip_accents and tokenize_chinese_chars from tokenizer_config.json, as transformers does;
# the reference here is `transformers.BertTokenizerFast.from_pretrained` on the very same folder.

CASING_SENTENCES = [
    "Paris is the capital of France.",
    "The Café de Flore in Paris served a naïve young Poet.",
    "Anders Ångström measured the SPECTRUM of the Sun in Uppsala.",
    "NASA, the U.S.A. and the UN met in New York City in 1969.",
    "Émile Zola, Ödön von Horváth and Łódź: ÉCOLE NORMALE SUPÉRIEURE.",
    "İstanbul, ΟΔΟΣ and Straße are words of other scripts.",
    "北京大学 (Peking University) is in Beijing, 中国.",
    "Don't [MASK] the Elephant's trunk!",
]
CASING_CONFIGS = {  # name -> tokenizer_config.json entries of the MiniLM (uncased) folder
    "uncased": {"do_lower_case": True},
    "lower-keep-accents": {"do_lower_case": True, "strip_accents": False},
    "no-chinese-split": {"do_lower_case": True, "tokenize_chinese_chars": False},
}


def hf_tokenizer(folder):
    import transformers

    return transformers.BertTokenizerFast.from_pretrained(str(folder))


def assert_tokenizes_like_transformers(tok: BertTokenizer, folder, texts, label: str) -> None:
    """Pieces, piece ids and framed encodings (single and pair) of minibert equal transformers' on `folder`."""
    ref = hf_tokenizer(folder)
    mismatches = []
    for text in texts:
        expected, got = ref.tokenize(text), tok.tokenize(text)
        if got != expected:
            mismatches.append((text[:60], got[:12], expected[:12]))
            continue
        assert tok.convert_tokens_to_ids(got) == ref(text, add_special_tokens=False)["input_ids"], (label, text)
    assert not mismatches, f"{label}: {len(mismatches)} of {len(texts)} texts tokenize differently from " \
        f"transformers; first (text, minibert, transformers): {mismatches[0]}"
    for a, b in [(CASING_SENTENCES[0], None), (CASING_SENTENCES[1], CASING_SENTENCES[2])]:
        enc, expected = tok(a, b), ref(a, b)
        assert enc.input_ids == expected["input_ids"], f"{label}: input_ids of {a!r} differ from transformers"
        assert tok.encode(a, b) == ref.encode(a, b), f"{label}: encode({a!r}) must give the ids, as transformers'"
        assert enc.token_type_ids == expected["token_type_ids"], label


@pytest.fixture(scope="module")
def cased_folder(tmp_path_factory, wiki_paragraphs):
    """A cased WordPiece vocabulary trained on Wikipedia (and the test sentences, so that Å, é, ï are in its
    alphabet), saved as vocab.txt with tokenizer_config.json {"do_lower_case": false}."""
    folder = tmp_path_factory.mktemp("cased_tokenizer")
    trained = train_wordpiece([*wiki_paragraphs[:300], *CASING_SENTENCES * 3], vocab_size=3000, lowercase=False)
    save_vocab(trained, folder / "vocab.txt")
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false}', encoding="utf-8")
    return folder


def uncased_variant(tmp_path, name: str):
    """The MiniLM tokenizer files with tokenizer_config.json changed as CASING_CONFIGS[name] says."""
    import json
    import shutil

    folder = tmp_path / name
    folder.mkdir()
    for f in ("vocab.txt", "tokenizer.json", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copy(pretrained_dir() / f, folder / f)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, **CASING_CONFIGS[name]}), encoding="utf-8")
    return folder


def test_cased_folder_keeps_case_and_accents_like_transformers(offline, cased_folder, wiki_paragraphs):
    tok = BertTokenizer.from_pretrained(cased_folder)
    assert "Paris" in tok.vocab or any(t.startswith("P") for t in tok.vocab), "the trained vocabulary is not cased"
    pieces = tok.tokenize("Paris")
    assert pieces[0].startswith("P"), f"'Paris' was lower-cased: got {pieces}, expected pieces starting with 'P'"
    for word in ("Café", "Ångström", "naïve"):
        pieces = tok.tokenize(word)
        assert "".join(p.removeprefix("##") for p in pieces) == word, f"{word!r}: case or accents lost in {pieces}"
    assert_tokenizes_like_transformers(tok, cased_folder, [*CASING_SENTENCES, *wiki_paragraphs[:60]], "cased")


def test_cased_folder_with_strip_accents_true(offline, cased_folder, tmp_path):
    """strip_accents without lower-casing: Café -> Cafe (transformers' BertNormalizer does the same)."""
    import shutil

    folder = tmp_path / "cased_strip"
    shutil.copytree(cased_folder, folder)
    (folder / "tokenizer_config.json").write_text('{"do_lower_case": false, "strip_accents": true}')
    tok = BertTokenizer.from_pretrained(folder)
    assert "".join(p.removeprefix("##") for p in tok.tokenize("Café")) == "Cafe", tok.tokenize("Café")
    assert_tokenizes_like_transformers(tok, folder, CASING_SENTENCES, "cased, strip_accents=true")


@pytest.mark.parametrize("name", list(CASING_CONFIGS))
def test_uncased_folder_variants_like_transformers(offline, tmp_path, wiki_paragraphs, name):
    folder = uncased_variant(tmp_path, name)
    tok = BertTokenizer.from_pretrained(folder)
    assert_tokenizes_like_transformers(tok, folder, [*CASING_SENTENCES, *wiki_paragraphs[:60]], name)
    default = BertTokenizer(pretrained_dir() / "vocab.txt")  # lower-case, strip accents, split CJK
    if name == "lower-keep-accents":
        assert tok.tokenize("Ångström café") != default.tokenize("Ångström café"), "accents were stripped"
        assert tok.tokenize("PARIS") == ["paris"], "still lower-cased"
    if name == "no-chinese-split":
        assert tok.tokenize("北京大学") != default.tokenize("北京大学"), "the CJK ideographs were still split apart"
        assert tok.tokenize("北京大学")[1:] == ["##京", "##大", "##学"], tok.tokenize("北京大学")


def test_real_folder_casing_matches_transformers(offline):
    """The MiniLM folder as shipped: do_lower_case true, strip_accents null (follows lower-casing)."""
    tok = BertTokenizer.from_pretrained(pretrained_dir())
    assert tok.tokenize("Paris Café") == ["paris", "cafe"]
    assert_tokenizes_like_transformers(tok, pretrained_dir(), CASING_SENTENCES, "MiniLM folder")


SAVE_SETTINGS = {
    "cased": {"do_lower_case": False},
    "lower-keep-accents": {"do_lower_case": True, "strip_accents": False},
    "no-chinese-split": {"tokenize_chinese_chars": False},
}


@pytest.mark.parametrize("name", list(SAVE_SETTINGS))
def test_save_pretrained_round_trips_casing(offline, cased_folder, tmp_path, name):
    """New API: BertTokenizer.save_pretrained writes vocab.txt and tokenizer_config.json with the casing."""
    import json

    assert hasattr(BertTokenizer, "save_pretrained"), "BertTokenizer has no save_pretrained (new API)"
    vocab = cased_folder / "vocab.txt" if name == "cased" else pretrained_dir() / "vocab.txt"
    tok = BertTokenizer(vocab, **SAVE_SETTINGS[name])
    tok.save_pretrained(tmp_path)
    assert (tmp_path / "vocab.txt").read_text(encoding="utf-8") == vocab.read_text(encoding="utf-8")
    config = json.loads((tmp_path / "tokenizer_config.json").read_text(encoding="utf-8"))
    for key, value in SAVE_SETTINGS[name].items():
        assert config.get(key) == value, f"tokenizer_config.json: expected {key}={value!r}, got {config}"
    again = BertTokenizer.from_pretrained(tmp_path)
    for text in CASING_SENTENCES:
        assert again.tokenize(text) == tok.tokenize(text), f"{name}: minibert reads its own save differently"
    assert_tokenizes_like_transformers(tok, tmp_path, CASING_SENTENCES, f"saved {name}")


def test_tokenizer_folder_keeps_its_max_length_and_refuses_a_gapped_vocabulary(tmp_path):
    tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "cat"], max_length=64)
    folder = tok.save_pretrained(tmp_path / "tok")
    assert BertTokenizer.from_pretrained(folder).max_length == 64, "model_max_length should come back"
    gapped = BertTokenizer({"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 5, "cat": 7})
    with pytest.raises(ValueError, match="vocab.txt"):
        gapped.save_pretrained(tmp_path / "gapped")


def test_stable_order_keeps_the_pieces_and_the_tokenization(wiki_paragraphs):
    from tokenizers import trainers

    raw = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    raw.normalizer = normalizers.BertNormalizer(lowercase=True)
    raw.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=1000, special_tokens=list(SPECIAL_TOKENS))
    raw.train_from_iterator(wiki_paragraphs, trainer)
    stable = in_stable_order(Tokenizer.from_str(raw.to_str()))
    assert set(stable.get_vocab()) == set(raw.get_vocab())
    assert [stable.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    for text in wiki_paragraphs[:50]:
        assert stable.encode(text).tokens == raw.encode(text).tokens


TRAIN_IN_A_PROCESS = """
import sys
from minibert.tokenization import save_vocab, train_wordpiece
texts = open(sys.argv[1], encoding="utf-8").read().split("\\n")
save_vocab(train_wordpiece(texts, vocab_size=int(sys.argv[3])), sys.argv[2])
"""


@pytest.mark.parametrize("size", [300, 800])
def test_trained_vocab_is_the_same_in_every_process(tmp_path, size):
    """tokenizers numbers the ##x pieces in hash-map order, which changes from process to process, and breaks ties
    between merges by those numbers (tokenizers#1794): the same corpus gave other pieces, in another order."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(p for a in load_wikipedia_sample(limit=12) for p in a.paragraphs), encoding="utf-8")
    files = [tmp_path / f"vocab{run}.txt" for run in range(4)]
    for file in files:
        subprocess.run([sys.executable, "-c", TRAIN_IN_A_PROCESS, str(corpus), str(file), str(size)], check=True)
    first = files[0].read_text(encoding="utf-8").splitlines()
    for other in files[1:]:
        lines = other.read_text(encoding="utf-8").splitlines()
        assert len(lines) == len(first)
        moved = sum(a != b for a, b in zip(first, lines, strict=True))
        assert moved == 0, f"{other.name}: {moved} of {len(lines)} lines differ from the first process's"
