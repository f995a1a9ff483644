# Generated from notebook 08_finetuning.ipynb by minibert_course.export: edit the notebook, not this file.
"""Extractive-QA training questions generated from the Wikipedia sample by templates (chapter 08).

Why generate: no QA data set ships in a package, and the hand-written set (minibert/resources/wiki_qa_eval.json) is
for evaluation only. Templates give thousands of questions whose answers are exact spans and mostly right (a template
can misfire: "Aruba is a generally flat ..." gives "What is Aruba?" -> "generally flat"), at the price of questions
that copy their sentence almost word for word: a model trained on them learns to find a span in a sentence
that matches the question, which is the skill extractive QA needs, but it is an easier task than SQuAD's or the
evaluation set's paraphrased questions. We say so in the notebook rather than pretend otherwise.

The procedure, deterministic given the seed (with the defaults: 3,140 questions on 1,765 paragraphs of 94 articles):
1. Paragraphs: every paragraph of `minibert.corpus.load_wikipedia_sample()`, in corpus order, except (a) those used as
   a context by the evaluation set (compared as exact strings: its contexts are corpus paragraphs), so training and
   evaluation never share a paragraph, and (b) disambiguation pages and lists ("... (disambiguation)", "List of ..."),
   whose "paragraphs" are link lists run together.
2. Sentences: a regular-expression splitter (., ! or ? then a space and a capital, an opening quote or bracket; not
   after a known abbreviation or a single letter such as an initial). Only sentences of at most MAX_SENTENCE_WORDS
   words that end with a full stop, ! or ? are used (list items run together have none).
3. Templates. Each but "definition" keeps the sentence and puts a question phrase in place of the answer phrase (an
   "echo question"); an answer that also occurs in its question is dropped, as the question would give it away:
     year        "... in (May) 1928 ..."        -> "... in what year ...?"          answer 1928 (also since/by/until...)
     date        "... on 14 March 1879 ..."     -> "... on what date ...?"          answer 14 March 1879
     definition  "X is/was a(n) Y ..."          -> "What is/was X?"                 answer Y, up to a clause break;
                                                                                     X must be a name (capitalised)
     how_many    "... 300 species ..."          -> "... how many species ...?"      answer 300 (not years, money)
     percentage  "... 29% of adults ..."        -> "... what percentage of adults ...?"  answer 29%
     by_whom     "... was written by Homer ..." -> "... was written by whom ...?"   answer Homer
     where       "... born in Ulm, Germany ..." -> "... born where ...?"            answer Ulm, Germany
   The last three put the question word first, as people ask ("Which company released BERT?"), rather than echo:
     who         "Aikido was created by Morihei Ueshiba." -> "Who created Aikido?"          answer Morihei Ueshiba
                 "Fleming discovered penicillin in 1928." -> "Who discovered penicillin in 1928?"   answer Fleming
     when        "The tower was built in 1889 for the fair." -> "When was the tower built for the fair?"  answer 1889
     where_was   "Einstein was born in Ulm, Germany."   -> "Where was Einstein born?"      answer Ulm, Germany
   and "which" asks for a name by its kind, where the sentence puts a kind of thing (one of 91
   nouns: city, river, company, poet, novel, ...) before the name; fronted when the name is the subject:
     which       "... admired the composer Maurice Ravel." -> "... admired which composer?"  answer Maurice Ravel
                 "The company Google released BERT."      -> "Which company released BERT?"  answer Google
                 "... fled to the city of Troy."           -> "... fled to which city?"       answer Troy
   A name (by_whom, where, who, where_was) is a run of capitalised words that ends at punctuation or a function word,
   so "by Japanese forces" (an adjective) asks nothing; months and possessives are not names. A one-word name at the
   start of a sentence ("Simple branched alkanes have ...") counts as a name only if the paragraph also has it,
   capitalised, after a lower-case word or a comma ("... by Einstein").
4. Selection, in two steps, so that no kind of question dominates (before this rule, 48% of the questions asked
   "in what year"): (a) per paragraph, candidates are ordered by sha256(seed, question), then dealt out one per
   template in turn (the first of each template, then the second of each, ...), and the first MAX_PER_PARAGRAPH are
   kept, so long paragraphs do not dominate and a paragraph's questions differ in kind; (b) over the whole set, a
   template keeps at most MAX_TEMPLATE_SHARE of the questions: the largest cap C with C <= share x (questions left
   when every template is cut to C), a template over C keeping its C questions of lowest sha256(seed, question).
   Each answer is checked to be the exact span of the paragraph at its offset.
5. Output: SQuAD v1.1 JSON ({"version": "1.1", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}), ids
   "gen-<seed>-<n>" numbered in corpus order, one answer per question, and an extra "template" field per question
   (readers of SQuAD JSON ignore unknown fields).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from importlib import resources
from typing import Any, NamedTuple

__all__ = ["generate_qa", "template_counts", "paragraph_candidates", "sentence_offsets", "eval_contexts", "Candidate",
           "year_questions", "date_questions", "definition_questions", "how_many_questions", "percentage_questions",
           "by_whom_questions", "where_questions", "who_questions", "when_questions", "where_was_questions",
           "which_questions", "select_candidates", "template_cap"]

QA_SEED = 0
MAX_PER_PARAGRAPH = 4
MAX_TEMPLATE_SHARE = 0.25
MAX_SENTENCE_WORDS = 50

_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "vs", "c", "ca", "e.g", "i.e", "u.s", "u.k", "no", "vol",
                  "gen", "col", "lt", "fr", "rev", "prof", "inc", "ltd", "co", "mt", "ft", "approx", "etc", "fig", "op",
                  "sen", "rep", "gov", "capt", "sgt", "adm"}
_PROSE_END = re.compile(r"[.!?][\"'”’)]*$")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)]*\s+(?=[A-Z\"“‘(\[])")
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_NOT_A_SUBJECT = {  # "What is It?", "What was In 1990 it?": the subject must be a name
    "it", "he", "she", "they", "this", "that", "these", "those", "there", "its", "his", "her", "their", "one", "each",
    "some", "many", "most", "all", "both", "such", "what", "which", "who", "here", "in", "on", "at", "after", "before",
    "during", "since", "for", "from", "by", "with", "as", "although", "while", "when", "however", "if", "because",
    "but", "and", "today", "now", "then", "thus", "below", "following",
}
_CONNECTORS = {"of", "the", "de", "da", "del", "von", "van", "and", "for", "in", "on", "upon", "la", "le", "du"}
_NAME = r"[A-Z][\w'’.-]*(?: (?:(?:de|da|del|von|van|of|upon|bin|ibn|al|e) )?[A-Z][\w'’.-]*){0,5}"  # capitalised words

_MONTH = "|".join(_MONTHS[:12])
_YEAR = re.compile(r"\b((?i:in|since|by|until|from|after|before|around|about))(?: (?:early|late|mid-?)?(?:" + _MONTH
                   + r"))? ((?:1[0-9]|20)\d\d)\b(?![-–]\d)")
_DATE = re.compile(r"\b([Oo]n) (\d{1,2} (?:" + _MONTH + r") \d{4}|(?:" + _MONTH + r") \d{1,2}, \d{4})\b")
_PERCENT = re.compile(r"(?<![\d.,+±–−-])(?P<answer>\d+(?:\.\d+)?(?:%| percent))")
_DEFINITION = re.compile(r"^(?P<subject>[A-Z][^,;:()]*?(?: \([^()]*\))?) (?P<verb>is|was|are|were) (?:a|an) "
                         r"(?P<answer>[^,;:()]+?)"
                         r"(?=[,;:(]|\.$| (?:that|which|who|whose|where|when|and is|and was)\b|$)")
# not after $ (money), a sign (a negative number) or a dash, slash or dot (part of a range, date or longer number)
_HOW_MANY = re.compile(r"(?<![$£€+±–−/.\w-])(?P<answer>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?) "
                       r"(?P<unit>(?:[a-z]+ )?(?:[a-z]{3,}s|people|children|men|women))\b")
# a name ends at punctuation or a function word: "by Japanese forces" names no one, "by Japan in 1942" does
_NAME_END = (r"(?=[,.;:?!)]|$| (?:in|on|at|for|to|from|and|or|since|between|during|who|which|as|after|before|with|when"
             r"|until|while|through|via|of|under|into|near|because)\b)")
_BY_WHOM = re.compile(r"\b(?:is|was|were|are|been|being) (?:\w+ )?\w+(?:ed|en|wn|ht|ded) by (?P<answer>"
                      + _NAME + ")" + _NAME_END)
_WHERE = re.compile(r"\b(?:born|died|located|situated|buried|based|headquartered) in (?P<answer>"
                    + _NAME + r"(?:, " + _NAME + ")?)" + _NAME_END)


# fronted questions: a subject is a name ("The novel Atlas Shrugged", "Einstein") or "The" and one or two words
_SUBJECT = (r"(?P<subject>(?:The (?:[a-z]+ ){0,2})?[A-Z][\w'’.-]*"
            r"(?: (?:(?:of|the|de|von|van|and) )?[A-Z][\w'’.-]*){0,5}|The [a-z]+(?: [a-z]+)?)")
_PARTICIPLES = {"written": "wrote", "given": "gave", "taken": "took", "drawn": "drew", "shown": "showed",
                "sung": "sang", "begun": "began", "chosen": "chose"}  # else the participle is the past tense
_WHO_PASSIVE = re.compile(r"^" + _SUBJECT + r" (?:is|was|were|are) (?:(?P<adverb>first|originally|later|also) )?"
                          r"(?P<verb>[a-z]+ed|written|built|made|given|taken|led|won|drawn|shown|sung|held|sent|told"
                          r"|found|brought|sold|taught|begun|chosen) by (?P<answer>" + _NAME + ")" + _NAME_END
                          + r"(?P<rest>[^;:]*?)[.!]$")
_WHO_ACTIVE = re.compile(r"^(?P<answer>" + _NAME + r") (?P<verb>[a-z]+ed|wrote|founded|built|won|led|made|gave"
                         r"|became|took|began|discovered|invented)(?P<rest> [^;:]+?)[.!]$")
_PASSIVE = r" (?P<aux>was|were) (?:(?:first|later|officially|formally|finally) )?(?P<verb>[a-z]+(?:ed|en|wn|lt|nt|ne))"
_YEAR_ANSWER = r"(?P<answer>(?:1[0-9]|20)\d\d)"
_WHEN_PASSIVE = re.compile(r"^" + _SUBJECT + _PASSIVE + r"(?P<middle>(?: [\w'’-]+){0,8}?) in " + _YEAR_ANSWER
                           + r"(?P<rest>[^,;:]*?)\.$")
_WHEN_FRONT = re.compile(r"^In " + _YEAR_ANSWER + r", " + _SUBJECT + _PASSIVE + r"(?P<rest>[^,;:]*?)\.$")
_WHERE_PASSIVE = re.compile(r"^" + _SUBJECT + r" (?P<aux>is|was|were|are) (?P<verb>born|buried|located|situated|based"
                            r"|founded|headquartered|built|held|raised|educated) (?:in|at) (?P<answer>" + _NAME
                            + r"(?:, " + _NAME + ")?)" + _NAME_END)
_WHERE_ACTIVE = re.compile(r"^" + _SUBJECT + r" (?P<verb>died|lived|grew up|studied|settled|moved|emigrated|worked"
                           r"|retired) (?:in|at|to) (?P<answer>" + _NAME + r"(?:, " + _NAME + ")?)" + _NAME_END)
_BASE_FORMS = {"died": "die", "lived": "live", "grew up": "grow up", "studied": "study", "settled": "settle",
               "moved": "move", "emigrated": "emigrate", "worked": "work", "retired": "retire"}
# "which" questions: a name in apposition to a noun that says what kind of thing it is ("the poet Statius")
_KINDS = ("city town village capital river lake sea ocean island mountain country state province region county "
          "company firm band orchestra king queen emperor empress president poet writer author novelist playwright "
          "composer painter artist philosopher scientist physicist chemist biologist mathematician astronomer general "
          "admiral actor actress singer director architect novel book film album song play opera poem ship team club "
          "university college church newspaper magazine journal dynasty kingdom empire language god goddess saint "
          "pope prince princess duke historian economist psychologist engineer inventor explorer sultan pharaoh tribe "
          "battle treaty festival award prize planet moon star").split()
_PLACES = ("city", "town", "village", "island", "province", "county", "kingdom", "state", "region")  # "the city of X"
_WHICH_KIND = (r"(?:(?P<adjective>[A-Z][a-z]+(?:-[A-Z][a-z]+)? )?(?P<kind>" + "|".join(_KINDS) + r")|(?P<place>"
               + "|".join(_PLACES) + r") of) (?P<answer>" + _NAME + ")")
_WHICH = re.compile(r"\b[Tt]he " + _WHICH_KIND + _NAME_END)
_WHICH_SUBJECT = re.compile(r"^The " + _WHICH_KIND + r"(?= [a-z]+ )")  # "The poet Statius began ...": its verb ends it


class Candidate(NamedTuple):
    template: str
    question: str
    answer_start: int  # offset in the sentence
    answer: str


def sentence_offsets(paragraph: str) -> list[tuple[int, str]]:
    """(offset, sentence) pairs that tile the paragraph, for templates that work on one sentence.

    Not `minibert.data.split_sentences` (chapter 05's, which returns the sentences only): this one also knows curly
    quotes and nine more abbreviations. One splitter with both sets of rules would split 110 of the sample's 5,326
    paragraphs differently from this one and 5 differently from chapter 05's (measured 2026-12-02), which changes
    the generated questions and the pretraining corpus that the measured figures of chapters 06, 08 and 10 were
    computed on."""
    sentences, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        last_word = paragraph[start:m.start()].rsplit(" ", 1)[-1].rstrip(".").lower()
        if last_word in _ABBREVIATIONS or re.fullmatch(r"[a-z]", last_word):
            continue
        sentences.append((start, paragraph[start:m.end()].rstrip()))
        start = m.end()
    if paragraph[start:].strip():
        sentences.append((start, paragraph[start:].rstrip()))
    return sentences


def _as_question(text: str) -> str:
    text = text.strip().rstrip(".!;:, ")
    return text[:1].upper() + text[1:] + "?"


def _echo(sentence: str, span: tuple[int, int], phrase: str) -> str:
    """The sentence with sentence[span] replaced by a question phrase, as a question."""
    return _as_question(sentence[: span[0]] + phrase + sentence[span[1]:])


def year_questions(sentence: str) -> Iterable[Candidate]:
    for m in _YEAR.finditer(sentence):
        yield Candidate("year", _echo(sentence, m.span(), m.group(1) + " what year"), m.start(2), m.group(2))


def date_questions(sentence: str) -> Iterable[Candidate]:
    for m in _DATE.finditer(sentence):
        yield Candidate("date", _echo(sentence, m.span(), m.group(1) + " what date"), m.start(2), m.group(2))


def definition_questions(sentence: str) -> Iterable[Candidate]:
    m = _DEFINITION.match(sentence)
    if not m:
        return
    subject = re.sub(r"\s*\([^()]*\)", "", m["subject"]).strip()
    answer = m["answer"].rstrip()  # "a study of music (..." stops before the space too
    names, answer_words = subject.split(), answer.split()
    if not 1 <= len(names) <= 6 or names[0].lower() in _NOT_A_SUBJECT or not 1 <= len(answer_words) <= 10:
        return
    if not all(w[0].isupper() or w[0].isdigit() or w in _CONNECTORS for w in names):
        return  # "The city is a ..." names nothing to ask about
    subject = re.sub(r"^The ", "the ", subject)
    yield Candidate("definition", f"What {m['verb']} {subject}?", m.start("answer"), answer)


def how_many_questions(sentence: str) -> Iterable[Candidate]:
    for m in _HOW_MANY.finditer(sentence):
        if re.fullmatch(r"1[0-9]\d\d|20\d\d", m["answer"]):
            continue  # a year ("1990 elections")
        yield Candidate("how_many", _echo(sentence, (m.start(), m.start("unit")), "how many "), m.start(), m["answer"])


def percentage_questions(sentence: str) -> Iterable[Candidate]:
    for m in _PERCENT.finditer(sentence):
        yield Candidate("percentage", _echo(sentence, m.span(), "what percentage"), m.start(), m["answer"])


def _name(m: re.Match[str]) -> str | None:
    """The capitalised name a pattern found; None for a month ("by January") or a possessive ("by Mirwais' son")."""
    answer = m["answer"].rstrip(".")
    if answer.split()[0] in _MONTHS or re.search(r"['’]s\b|['’]$", answer):
        return None
    return answer


def by_whom_questions(sentence: str) -> Iterable[Candidate]:
    for m in _BY_WHOM.finditer(sentence):
        if answer := _name(m):
            span = (m.start("answer"), m.start("answer") + len(answer))
            yield Candidate("by_whom", _echo(sentence, span, "whom"), m.start("answer"), answer)


def where_questions(sentence: str) -> Iterable[Candidate]:
    for m in _WHERE.finditer(sentence):
        if answer := _name(m):
            span = (m.start("answer") - len("in "), m.start("answer") + len(answer))
            yield Candidate("where", _echo(sentence, span, "where"), m.start("answer"), answer)


def _subject(subject: str) -> str | None:
    """The subject as it reads inside a question ("The tower" -> "the tower"); None if it is not a name."""
    words = subject.split()
    if words[0].lower() in _NOT_A_SUBJECT or len(words) > 6:
        return None
    return re.sub(r"^The ", "the ", subject)


def who_questions(sentence: str) -> Iterable[Candidate]:
    """"X was V-ed by NAME ..." -> "Who V-ed X ...?"; "NAME V-ed ..." -> "Who V-ed ...?" (answer NAME)."""
    m = _WHO_PASSIVE.match(sentence)
    if m and (subject := _subject(m["subject"])) and (answer := _name(m)) and answer == m["answer"]:
        verb = _PARTICIPLES.get(m["verb"], m["verb"])
        rest = m["rest"].strip()
        yield Candidate("who", _as_question(f"Who {m['adverb'] + ' ' if m['adverb'] else ''}{verb} {subject}"
                                            f"{' ' + rest if rest else ''}"), m.start("answer"), answer)
    m = _WHO_ACTIVE.match(sentence)
    if m and (answer := _name(m)) and answer == m["answer"] and m["answer"].split()[0].lower() not in _NOT_A_SUBJECT:
        if len(answer.split()) <= 5 and len(m["rest"].split()) >= 2:
            yield Candidate("who", _as_question(f"Who {m['verb']}{m['rest']}"), 0, answer)


def when_questions(sentence: str) -> Iterable[Candidate]:
    """"X was V-ed ... in 1889 ..." -> "When was X V-ed ...?" (answer 1889); not when another year is left in it."""
    for m in (_WHEN_PASSIVE.match(sentence), _WHEN_FRONT.match(sentence)):
        if m and (subject := _subject(m["subject"])):
            said = f"{m['verb']}{m['middle'] if 'middle' in m.re.groupindex else ''}{m['rest']}"
            if not re.search(r"\b\d{3,4}\b", said):  # another year left in the question would make it ambiguous
                yield Candidate("when", _as_question(f"When {m['aux']} {subject} {said}"), m.start("answer"),
                                m["answer"])


def where_was_questions(sentence: str) -> Iterable[Candidate]:
    """"X was born in NAME ..." -> "Where was X born?"; "X died in NAME" -> "Where did X die?" (answer NAME)."""
    m = _WHERE_PASSIVE.match(sentence)
    if m and (subject := _subject(m["subject"])) and (answer := _name(m)):
        yield Candidate("where_was", f"Where {m['aux']} {subject} {m['verb']}?", m.start("answer"), answer)
    m = _WHERE_ACTIVE.match(sentence)
    if m and (subject := _subject(m["subject"])) and (answer := _name(m)):
        yield Candidate("where_was", f"Where did {subject} {_BASE_FORMS[m['verb']]}?", m.start("answer"), answer)


def which_questions(sentence: str) -> Iterable[Candidate]:
    """"... by the French philosopher Auguste Comte ..." -> "... by which French philosopher ...?"; "the city of
    Troy" -> "which city"; "The poet Statius began ..." -> "Which poet began ...?" (answer the name). The noun must
    be one of _KINDS (or of _PLACES, before "of"), so that the question asks for a kind of thing: "the dire state of
    Ireland" and "the queen of Thebes" (Thebes is not the queen) ask nothing."""
    subject = _WHICH_SUBJECT.match(sentence)
    for m in [subject] if subject else _WHICH.finditer(sentence):
        if answer := _name(m):
            kind = f"{m['adjective'] or ''}{m['kind'] or m['place']}"
            span = (m.start(), m.start("answer") + len(answer))
            yield Candidate("which", _echo(sentence, span, "which " + kind), m.start("answer"), answer)


TEMPLATES: dict[str, Callable[[str], Iterable[Candidate]]] = {
    "year": year_questions, "date": date_questions, "definition": definition_questions,
    "how_many": how_many_questions, "percentage": percentage_questions, "by_whom": by_whom_questions,
    "where": where_questions, "who": who_questions, "when": when_questions, "where_was": where_was_questions,
    "which": which_questions,
}


def paragraph_candidates(paragraph: str) -> list[Candidate]:
    """Every template match in the paragraph, with answer_start made paragraph-relative."""
    found = []
    for offset, sentence in sentence_offsets(paragraph):
        if len(sentence.split()) > MAX_SENTENCE_WORDS or not _PROSE_END.search(sentence):
            continue  # too long for a question, or list items run together (no full stop)
        for template in TEMPLATES.values():
            for c in template(sentence):
                if not c.answer.strip() or c.answer.lower() in c.question.lower():
                    continue
                if c.answer_start == 0 and " " not in c.answer and not re.search(
                        r"[a-z,] " + re.escape(c.answer) + r"\b", paragraph):
                    continue  # "Simple branched alkanes ...": a capital at the start of a sentence is not a name
                found.append(c._replace(answer_start=offset + c.answer_start))
    return found


def select_candidates(candidates: list[Candidate], seed: int = QA_SEED,
                      max_per_paragraph: int = MAX_PER_PARAGRAPH) -> list[Candidate]:
    """One paragraph's questions (step 4a): in sha256 order, dealt out one per template in turn."""
    ranked = sorted(candidates, key=lambda c: _rank(seed, c.question))
    turn: Counter[str] = Counter()
    dealt = []
    for c in ranked:
        dealt.append((turn[c.template], len(dealt), c))  # the k-th question of its template goes in round k
        turn[c.template] += 1
    return [c for _, _, c in sorted(dealt)[:max_per_paragraph]]


def template_cap(counts: Counter[str], share: float = MAX_TEMPLATE_SHARE) -> int:
    """The largest C with C <= share x sum(min(n, C)) over templates (step 4b): cut to C, no template has more than
    `share` of the questions left."""
    cap = max(counts.values(), default=0)
    while cap > 0 and cap > share * sum(min(n, cap) for n in counts.values()):
        cap -= 1
    return cap


def eval_contexts() -> set[str]:
    """The contexts of the hand-written evaluation set, which training must not see."""
    with resources.files("minibert").joinpath("resources/wiki_qa_eval.json").open(encoding="utf-8") as f:
        return {p["context"] for article in json.load(f)["data"] for p in article["paragraphs"]}


def _rank(seed: int, text: str) -> str:
    return hashlib.sha256(f"{seed}\x00{text}".encode()).hexdigest()


def generate_qa(articles: Sequence[Any] | None = None, seed: int = QA_SEED, exclude: set[str] | None = None,
                max_per_paragraph: int = MAX_PER_PARAGRAPH) -> dict[str, Any]:
    """SQuAD v1.1 training questions from articles with .title and .paragraphs (default: the Wikipedia sample).

    `exclude` holds contexts to leave out (default: the evaluation set's). See the module docstring for the procedure.
    """
    if articles is None:
        from minibert.corpus import load_wikipedia_sample

        articles = load_wikipedia_sample()
    exclude = eval_contexts() if exclude is None else exclude
    selected = []  # (title, context, candidates), step 4a
    for article in articles:
        if "(disambiguation)" in article.title or article.title.startswith("List of"):
            continue  # lists of links, not prose
        for context in article.paragraphs:
            if context not in exclude:
                selected.append((article.title, context,
                                 select_candidates(paragraph_candidates(context), seed, max_per_paragraph)))
    cap = template_cap(Counter(c.template for _, _, chosen in selected for c in chosen))
    kept: set[tuple[str, str]] = set()  # (context, question), step 4b
    for template in TEMPLATES:
        of_template = [(_rank(seed, c.question), context, c.question) for _, context, chosen in selected
                       for c in chosen if c.template == template]
        kept.update((context, question) for _, context, question in sorted(of_template)[:cap])
    data, count = [], 0
    for title, context, chosen in selected:
        qas = []
        for c in sorted(chosen, key=lambda c: c.answer_start):
            if (context, c.question) not in kept:
                continue
            assert context[c.answer_start: c.answer_start + len(c.answer)] == c.answer, (context, c)
            qas.append({"id": f"gen-{seed}-{count:05d}", "question": c.question, "template": c.template,
                        "answers": [{"text": c.answer, "answer_start": c.answer_start}]})
            count += 1
        if qas:
            if not data or data[-1]["title"] != title:
                data.append({"title": title, "paragraphs": []})
            data[-1]["paragraphs"].append({"context": context, "qas": qas})
    return {"version": "1.1", "data": data}


def template_counts(dataset: dict[str, Any]) -> Counter[str]:
    """How many questions each template produced."""
    return Counter(qa["template"] for a in dataset["data"] for p in a["paragraphs"] for qa in p["qas"])
