"""The speech recogniser's domain models: a proper back-off language model and a grammar."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pimcloud.workloads.datasets import (
    SENTENCES,
    DataError,
    arpa_language_model,
    jsgf_grammar,
    pronunciations,
)


def _read_arpa(text: str) -> tuple[dict[tuple[str, ...], float], dict[tuple[str, ...], float]]:
    """(probability, back-off weight) of every listed n-gram, from the ARPA text alone."""
    prob: dict[tuple[str, ...], float] = {}
    backoff: dict[tuple[str, ...], float] = {}
    section = 0
    for line in text.splitlines():
        if line.endswith("-grams:"):
            section = int(line[1])
        elif section and line and not line.startswith("\\"):
            fields = line.split("\t")
            gram = tuple(fields[1].split())
            assert len(gram) == section
            prob[gram] = 10 ** float(fields[0])
            if len(fields) > 2:
                backoff[gram] = 10 ** float(fields[2])
    return prob, backoff


def test_every_context_of_the_language_model_sums_to_one() -> None:
    sentences = [s.split() for s in SENTENCES]
    text, _ = arpa_language_model(sentences)
    prob, backoff = _read_arpa(text)
    assert text.startswith("\\data\\\nngram 1=") and text.rstrip().endswith("\\end\\")

    def p(gram: tuple[str, ...]) -> float:
        if gram in prob:
            return prob[gram]
        return 0.0 if len(gram) == 1 else backoff.get(gram[:-1], 1.0) * p(gram[1:])

    vocabulary = sorted({w for s in sentences for w in s} | {"</s>"})
    contexts = [(), ("<s>",), ("the",), ("<s>", "the"), ("the", "cat"), ("in", "the")]
    for context in contexts:
        assert math.isclose(sum(p((*context, w)) for w in vocabulary), 1.0, rel_tol=1e-5)
    # A seen trigram is likelier than the same words in an order never seen.
    assert p(("the", "cat", "is")) > 10 * p(("cat", "the", "is"))
    # Every n-gram's prefix is listed, as ARPA readers require.
    assert all(g[:-1] in prob for g in prob if len(g) > 1)


def test_bad_language_model_input_is_refused() -> None:
    with pytest.raises(DataError, match="discount"):
        arpa_language_model([["a"]], discount=1.5)


def test_the_grammar_accepts_exactly_the_sentences() -> None:
    text = jsgf_grammar(["open the door", "close it"])
    assert text.startswith("#JSGF V1.0;")
    assert "public <request> =\n    open the door\n  | close it;" in text
    with pytest.raises(DataError, match="Open"):
        jsgf_grammar(["Open the door!"])


def test_pronunciations_cover_every_word_or_name_the_missing(tmp_path: Path) -> None:
    dictionary = tmp_path / "dict"
    dictionary.write_text("a AH\na(2) EY\ncat K AE T\ndog D AO G\n")
    assert pronunciations({"a", "cat"}, dictionary) == ["a AH", "a(2) EY", "cat K AE T"]
    with pytest.raises(DataError, match="zebra"):
        pronunciations({"cat", "zebra"}, dictionary)
