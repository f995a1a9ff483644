"""Tests of the generated QA training set: valid SQuAD v1.1, exact spans, no shared context with the eval set,
deterministic given the seed; and of each template on sentences made for it."""

from __future__ import annotations

import json

import pytest

import minibert.metrics as fm
import minibert.qa_generation as qg


@pytest.fixture(scope="module")
def articles():
    from minibert.corpus import load_wikipedia_sample

    return load_wikipedia_sample()


@pytest.fixture(scope="module")
def generated(articles):
    return qg.generate_qa(articles)


def _qas(dataset):
    return [(p["context"], qa) for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"]]


def test_generated_set_is_valid_squad_v1_1(generated):
    assert generated["version"] == "1.1"
    ids = set()
    for article in generated["data"]:
        assert isinstance(article["title"], str) and article["paragraphs"]
        for paragraph in article["paragraphs"]:
            assert isinstance(paragraph["context"], str) and paragraph["qas"]
            for qa in paragraph["qas"]:
                assert qa["id"] not in ids
                ids.add(qa["id"])
                assert qa["question"].endswith("?") and len(qa["question"]) > 10
                assert len(qa["answers"]) == 1 and isinstance(qa["answers"][0]["answer_start"], int)
    assert len(ids) >= 2_800


def test_every_answer_is_the_exact_span_at_its_offset(generated):
    for context, qa in _qas(generated):
        answer = qa["answers"][0]
        assert context[answer["answer_start"]: answer["answer_start"] + len(answer["text"])] == answer["text"], qa
        assert answer["text"] == answer["text"].strip() and answer["text"]
        assert answer["text"].lower() not in qa["question"].lower(), qa


def test_no_context_is_shared_with_the_evaluation_set(articles, generated):
    eval_contexts = qg.eval_contexts()
    assert len(eval_contexts) == 90
    contexts = [p["context"] for a in generated["data"] for p in a["paragraphs"]]
    assert not set(contexts) & eval_contexts
    corpus = {p for a in articles for p in a.paragraphs}
    assert set(contexts) <= corpus, "contexts are corpus paragraphs, unchanged"
    assert eval_contexts <= corpus, "so excluding by string really excludes the eval paragraphs"


def test_same_seed_same_output_other_seed_other_selection(articles, generated):
    assert json.dumps(qg.generate_qa(articles)) == json.dumps(generated)
    other = qg.generate_qa(articles, seed=1)
    assert {qa["question"] for _, qa in _qas(other)} != {qa["question"] for _, qa in _qas(generated)}
    assert all(qa["id"].startswith("gen-1-") for _, qa in _qas(other))


def test_every_template_contributes_and_none_dominates(generated):
    counts = qg.template_counts(generated)
    assert set(counts) == set(qg.TEMPLATES)
    assert min(counts.values()) >= 5
    assert max(counts.values()) <= qg.MAX_TEMPLATE_SHARE * sum(counts.values())
    assert counts["who"] + counts["when"] + counts["where_was"] >= 300, "questions that start with their question word"
    assert counts["which"] >= 80, "the hand-written test set asks 'which ...' in 80 of 256 questions"


def test_template_cap_is_the_largest_that_keeps_the_share():
    from collections import Counter

    counts = Counter(year=1700, how_many=900, who=600, date=100)
    cap = qg.template_cap(counts, 0.25)
    left = sum(min(n, cap) for n in counts.values())
    assert cap <= 0.25 * left and cap + 1 > 0.25 * sum(min(n, cap + 1) for n in counts.values())
    assert qg.template_cap(Counter(a=10, b=10, c=10, d=10), 0.25) == 10, "balanced counts are not cut"
    assert qg.template_cap(Counter(), 0.25) == 0


def test_a_paragraphs_questions_are_dealt_one_template_at_a_time():
    c = [qg.Candidate("year", f"year question {i}?", 0, "1900") for i in range(6)]
    c += [qg.Candidate("who", "who question?", 0, "Ada"), qg.Candidate("date", "date question?", 0, "1 May 1900")]
    chosen = qg.select_candidates(c, max_per_paragraph=4)
    assert [x.template for x in chosen].count("year") == 2 and {x.template for x in chosen} == {"year", "who", "date"}
    assert qg.select_candidates(c, max_per_paragraph=4) == chosen, "deterministic"


def test_gold_answers_score_100_with_squad_scores(generated):
    predictions = {qa["id"]: qa["answers"][0]["text"] for _, qa in _qas(generated)}
    assert fm.squad_scores(predictions, generated) == {"exact_match": 100.0, "f1": 100.0}


def test_excluded_contexts_are_left_out(articles):
    first = articles[0].paragraphs[0]
    assert first not in {p["context"] for a in qg.generate_qa(articles[:1], exclude={first})["data"]
                         for p in a["paragraphs"]}


# ---------------------------------------------------------------------------------------------- templates


def test_sentence_offsets_tile_the_paragraph():
    text = "Dr. Smith met J. R. Tolkien in 1950. They talked (briefly). Then \"Yes!\" he said. It ended"
    sentences = qg.sentence_offsets(text)
    assert [s for _, s in sentences] == ["Dr. Smith met J. R. Tolkien in 1950.", "They talked (briefly).",
                                         "Then \"Yes!\" he said.", "It ended"]
    assert all(text[offset: offset + len(s)] == s for offset, s in sentences)


def _one(template, sentence):
    found = list(qg.TEMPLATES[template](sentence))
    assert len(found) == 1, found
    c = found[0]
    assert sentence[c.answer_start: c.answer_start + len(c.answer)] == c.answer
    return c.question, c.answer


@pytest.mark.parametrize(("template", "sentence", "question", "answer"), [
    ("year", "Fleming found penicillin in 1928 in London.", "Fleming found penicillin in what year in London?", "1928"),
    ("year", "In May 1945, the war in Europe ended.", "In what year, the war in Europe ended?", "1945"),
    ("year", "By 1861, seven states had left.", "By what year, seven states had left?", "1861"),
    ("date", "Einstein was born on 14 March 1879.", "Einstein was born on what date?", "14 March 1879"),
    ("date", "It launched on July 16, 1969, from Florida.", "It launched on what date, from Florida?", "July 16, 1969"),
    ("definition", "Anarchism is a political philosophy that advocates self-governed societies.",
     "What is Anarchism?", "political philosophy"),
    ("definition", "The Iliad (c. 750 BC) is an ancient Greek epic poem, attributed to Homer.", "What is the Iliad?",
     "ancient Greek epic poem"),
    ("how_many", "The park has 300 bird species.", "The park has how many bird species?", "300"),
    ("how_many", "About 1,200,000 people live there.", "About how many people live there?", "1,200,000"),
    ("how_many", "300 people died.", "How many people died?", "300"),
    ("percentage", "About 29% of adults were obese.", "About what percentage of adults were obese?", "29%"),
    ("by_whom", "The Iliad was written by Homer.", "The Iliad was written by whom?", "Homer"),
    ("by_whom", "It was signed by Governor Nelson Rockefeller in April 1970.",
     "It was signed by whom in April 1970?", "Governor Nelson Rockefeller"),
    ("where", "Albert Einstein was born in Ulm, Germany, in 1879.", "Albert Einstein was born where, in 1879?",
     "Ulm, Germany"),
    ("who", "BERT was released by Google in 2018.", "Who released BERT in 2018?", "Google"),
    ("who", "The novel was written by Ayn Rand.", "Who wrote the novel?", "Ayn Rand"),
    ("who", "Morihei Ueshiba founded aikido in the 1920s.", "Who founded aikido in the 1920s?", "Morihei Ueshiba"),
    ("when", "The tower was built in 1889 for the fair.", "When was the tower built for the fair?", "1889"),
    ("when", "In 1909, Einstein was appointed associate professor.", "When was Einstein appointed associate professor?",
     "1909"),
    ("where_was", "Andre Agassi was born in Las Vegas, Nevada.", "Where was Andre Agassi born?", "Las Vegas, Nevada"),
    ("where_was", "Tarkovsky died in Paris on 29 December 1986.", "Where did Tarkovsky die?", "Paris"),
    ("which", "Gershwin admired the composer Maurice Ravel.", "Gershwin admired which composer?", "Maurice Ravel"),
    ("which", "It was coined by the French philosopher Auguste Comte in 1851.",
     "It was coined by which French philosopher in 1851?", "Auguste Comte"),
    ("which", "Hector fled to the city of Troy.", "Hector fled to which city?", "Troy"),
    ("which", "The company Google released BERT in 2018.", "Which company released BERT in 2018?", "Google"),
])
def test_template_makes_the_expected_question(template, sentence, question, answer):
    assert _one(template, sentence) == (question, answer)


@pytest.mark.parametrize(("template", "sentence"), [
    ("year", "It grew in the 1920s."),                      # a decade, not a year
    ("year", "The war lasted from 1914–1918."),              # a range
    ("definition", "It is a small town."),                   # a pronoun is not a name
    ("definition", "The city is a port."),                   # "The city" names nothing
    ("definition", "In 1990 it was a colony."),
    ("how_many", "The 1990 elections were close."),          # a year
    ("how_many", "It cost $300 millions."),                  # money
    ("how_many", "Temperatures fall to -40 degrees."),       # a negative number
    ("percentage", "It rose by 10-30% a year."),              # a range
    ("by_whom", "The islands were occupied by Japanese forces."),  # an adjective, not a name
    ("by_whom", "It was finished by January."),             # a month
    ("by_whom", "He was killed by Mirwais' son."),          # a possessive
    ("where", "He was born in January 1900."),
    ("who", "It was founded by Japanese traders."),              # a pronoun subject, an adjective answer
    ("who", "He wrote two novels."),                            # a pronoun answers no question
    ("when", "The fort was built in 1587 and enlarged in 1617."),  # a second year would make it ambiguous
    ("where_was", "She was born in March 1950."),               # a month is not a place
    ("which", "Niobe was the queen of Thebes."),                  # Thebes is not the queen
    ("which", "Swift presents the dire state of Ireland."),       # not a kind of thing
    ("which", "The river is long."),                             # no name
])
def test_template_declines(template, sentence):
    assert list(qg.TEMPLATES[template](sentence)) == []


def test_list_like_and_long_sentences_give_no_questions():
    assert qg.paragraph_candidates("Ada Air, a regional airline based in Tirana, Albania Ada International") == []
    long_sentence = "In 1900 " + "it rained and " * 30 + "it stopped."
    assert qg.paragraph_candidates(long_sentence) == []
    assert [c.template for c in qg.paragraph_candidates("It rained in 1900.")] == ["year"]
