"""Data sets of the six latency-critical services, built from Debian packages only.

Each builder writes one sub-folder of the data folder and returns what it made; sizes are
scaled for simulation (tens of MB at most) and recorded in ``manifest.json``:

- search:    Debian's fortune collections (packages fortunes, fortunes-min) as a corpus of
             short documents, a Xapian index of it, and queries drawn from the documents.
- imgdnn:    Fashion-MNIST (package dataset-fashion-mnist); a multi-layer perceptron is
             trained here with numpy and its weights and the held-out images are stored.
- speech:    sentences synthesised with espeak-ng, resampled to 16 kHz for PocketSphinx,
             with a JSGF grammar, a trigram language model and a dictionary of those
             sentences (pronunciations from pocketsphinx-en-us's CMU dictionary).
- translate: English sentences for Apertium eng-spa.
kvstore and oltp generate their tables at start from a seed and need no files.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import re
import shutil
import struct
import subprocess
import wave
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pimcloud.atomic import atomic_write_bytes, atomic_write_text
from pimcloud.paths import build_dir

FORTUNES = Path("/usr/share/games/fortunes")
FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")

# Short plain sentences (our own text) for speech and translation: words a general
# English language model and the eng-spa dictionaries know.
SENTENCES = (
    "the cat is in the house",
    "i would like a cup of coffee",
    "the weather is very nice today",
    "please open the door",
    "we are going to the market tomorrow",
    "my brother has a red car",
    "the children play in the garden",
    "she reads a book every night",
    "the train leaves at seven in the morning",
    "can you help me find the station",
    "the water in the river is cold",
    "he works in a large office",
    "they eat dinner with their family",
    "the city has many old buildings",
    "i need to buy some bread and milk",
    "the dog sleeps under the table",
    "our teacher speaks three languages",
    "the meeting starts after lunch",
    "this computer is very fast",
    "we walked along the beach",
)

# Short commands (one to three words) for translation requests small enough to sample a
# few hundred of in gem5: translate's `--opt max_words=N` draws only from the sentences of
# at most N words (workloads/README.md, "Request sizes").
SHORT_COMMANDS = (
    "stop",
    "yes",
    "no",
    "help",
    "cancel",
    "start",
    "repeat",
    "louder",
    "turn left",
    "turn right",
    "go back",
    "call home",
    "play music",
    "next page",
    "lights on",
    "lights off",
    "thank you",
    "good night",
    "send it",
    "show me more",
)

STOPWORDS = frozenset(
    {
        "that",
        "this",
        "with",
        "from",
        "have",
        "they",
        "will",
        "your",
        "what",
        "when",
        "there",
        "their",
        "which",
        "would",
        "about",
        "been",
        "were",
        "them",
        "then",
        "than",
        "some",
        "into",
        "more",
        "only",
        "other",
        "could",
        "these",
        "also",
        "just",
        "like",
    }
)


# Whole words only: "doesn't" is one term to Xapian, so "doesn" must not become a query.
WORD = re.compile(r"(?<![\w'\u2019.@-])[A-Za-z]{4,30}(?![\w'\u2019@]|-\w)")


class DataError(ValueError):
    """A data set cannot be built; the message names the missing input and the fix."""


def find_tool(name: str) -> Path:
    """A binary of the workloads build: $PIMCLOUD_WORKLOAD_BIN, the build tree, or PATH."""
    candidates: list[Path] = []
    if env := os.environ.get("PIMCLOUD_WORKLOAD_BIN"):
        candidates.append(Path(env) / name)
    build = build_dir() / "workloads"
    candidates += [build / "harness" / name]
    candidates += sorted((build / "services").glob(f"*/{name}"))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    found = shutil.which(name)
    if found:
        return Path(found)
    raise DataError(
        f"{name} not found in {build} or PATH; build it with "
        f"`cmake --build build --target {name}` or set PIMCLOUD_WORKLOAD_BIN"
    )


def _require(path: Path, package: str) -> None:
    if not path.exists():
        raise DataError(f"{path} is missing: install the Debian package {package}")


def read_fortunes(folder: Path = FORTUNES) -> list[tuple[str, str]]:
    """(collection, text) of every fortune, in a fixed order."""
    _require(folder, "fortunes")
    docs: list[tuple[str, str]] = []
    for f in sorted(folder.iterdir()):
        if f.suffix or f.is_symlink() or not f.is_file():
            continue  # .dat indexes and .u8 links
        text = f.read_text(encoding="utf-8", errors="replace")
        for chunk in re.split(r"^%\s*$", text, flags=re.M):
            chunk = chunk.strip()
            if len(chunk) >= 20:
                docs.append((f.name, chunk))
    if not docs:
        raise DataError(f"no fortunes found in {folder}: reinstall the Debian package fortunes")
    return docs


def build_search(out: Path, queries: int = 2000, seed: int = 1) -> dict[str, object]:
    """corpus.tsv, a Xapian index (db/) and queries.tsv (doc id TAB words)."""
    folder = out / "search"
    folder.mkdir(parents=True, exist_ok=True)
    docs = read_fortunes()
    lines = [
        f"{i}\t{src}\t{text.replace(chr(92), '/').replace(chr(10), chr(92) + 'n')}"
        for i, (src, text) in enumerate(docs)
    ]
    atomic_write_text(folder / "corpus.tsv", "\n".join(lines) + "\n")
    subprocess.run(
        [str(find_tool("pimcloud-search-index")), str(folder / "corpus.tsv"), str(folder / "db")],
        check=True,
        capture_output=True,
    )
    rng = np.random.default_rng(seed)
    picked: list[str] = []
    while len(picked) < queries:
        i = int(rng.integers(len(docs)))
        words = sorted({w.lower() for w in WORD.findall(docs[i][1])} - STOPWORDS)
        if len(words) < 2:
            continue
        n = int(rng.integers(1, min(3, len(words)) + 1))
        chosen = rng.choice(words, size=n, replace=False)
        picked.append(f"{i}\t{' '.join(str(w) for w in chosen)}")
    atomic_write_text(folder / "queries.tsv", "\n".join(picked) + "\n")
    return {"documents": len(docs), "queries": len(picked), "bytes": _size(folder)}


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4 : 4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def train_mlp(
    x: np.ndarray, y: np.ndarray, layers: tuple[int, ...], epochs: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """A ReLU perceptron with a softmax output, trained by SGD with momentum."""
    rng = np.random.default_rng(seed)
    sizes = (x.shape[1], *layers)
    params = [
        (
            (rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
            np.zeros(b, np.float32),
        )
        for a, b in itertools.pairwise(sizes)
    ]
    velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in params]
    lr, momentum, batch = 0.05, 0.9, 128
    for epoch in range(epochs):
        order = rng.permutation(len(x))
        step = lr / (1 + epoch)
        for start in range(0, len(x), batch):
            idx = order[start : start + batch]
            acts = [x[idx]]
            for k, (w, b) in enumerate(params):
                z = acts[-1] @ w + b
                acts.append(np.maximum(z, 0) if k < len(params) - 1 else z)
            logits = acts[-1]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(idx)), y[idx]] -= 1
            grad = p / len(idx)
            for k in range(len(params) - 1, -1, -1):
                w, b = params[k]
                gw, gb = acts[k].T @ grad, grad.sum(axis=0)
                if k:
                    grad = (grad @ w.T) * (acts[k] > 0)
                vw, vb = velocity[k]
                vw *= momentum
                vw -= step * gw
                vb *= momentum
                vb -= step * gb
                w += vw
                b += vb
    return params


def mlp_predict(params: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray) -> np.ndarray:
    a = x
    for k, (w, b) in enumerate(params):
        a = a @ w + b
        if k < len(params) - 1:
            a = np.maximum(a, 0)
    return np.asarray(a.argmax(axis=1))


def build_imgdnn(
    out: Path, layers: tuple[int, ...] = (256, 128, 10), epochs: int = 4, seed: int = 1
) -> dict[str, object]:
    """model.bin (see workloads/README.md), test-images.u8, test-labels.u8."""
    folder = out / "imgdnn"
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        n: FASHION_MNIST / f"{n}.gz"
        for n in (
            "train-images-idx3-ubyte",
            "train-labels-idx1-ubyte",
            "t10k-images-idx3-ubyte",
            "t10k-labels-idx1-ubyte",
        )
    }
    for f in files.values():
        _require(f, "dataset-fashion-mnist")
    train_x = _read_idx(files["train-images-idx3-ubyte"]).reshape(-1, 784)
    train_y = _read_idx(files["train-labels-idx1-ubyte"]).astype(np.int64)
    test_x = _read_idx(files["t10k-images-idx3-ubyte"]).reshape(-1, 784)
    test_y = _read_idx(files["t10k-labels-idx1-ubyte"])
    params = train_mlp(train_x.astype(np.float32) / 255, train_y, layers, epochs, seed)
    accuracy = float((mlp_predict(params, test_x.astype(np.float32) / 255) == test_y).mean())
    # model.bin: u32 layer count, u32 sizes (input first), then per layer W (in x out,
    # row-major) and b, float32 little-endian.
    sizes = (784, *layers)
    blob = struct.pack(f"<I{len(sizes)}I", len(layers), *sizes)
    for w, b in params:
        blob += w.astype("<f4").tobytes() + b.astype("<f4").tobytes()
    atomic_write_bytes(folder / "model.bin", blob)
    atomic_write_bytes(folder / "test-images.u8", test_x.tobytes())
    atomic_write_bytes(folder / "test-labels.u8", test_y.tobytes())
    return {
        "train_images": len(train_x),
        "test_images": len(test_x),
        "layers": list(sizes),
        "held_out_accuracy": round(accuracy, 4),
        "bytes": _size(folder),
    }


def _resample(samples: np.ndarray, rate_in: int, rate_out: int) -> np.ndarray:
    """Band-limit (windowed sinc) then interpolate: enough for speech."""
    cutoff = 0.45 * rate_out / rate_in
    taps = np.arange(-32, 33)
    kernel = 2 * cutoff * np.sinc(2 * cutoff * taps) * np.hamming(len(taps))
    filtered = np.convolve(samples, kernel / kernel.sum(), mode="same")
    t_out = np.arange(int(len(samples) * rate_out / rate_in)) * rate_in / rate_out
    return np.interp(t_out, np.arange(len(samples)), filtered)


POCKETSPHINX_MODEL = Path("/usr/share/pocketsphinx/model/en-us")


def ngram_counts(sentences: list[list[str]], order: int) -> list[dict[tuple[str, ...], int]]:
    """counts[n-1][gram]: occurrences of every n-gram (n = 1..order) of the sentences, each
    framed by <s> and </s>."""
    counts: list[dict[tuple[str, ...], int]] = [{} for _ in range(order)]
    for words in sentences:
        tokens = ["<s>", *words, "</s>"]
        for n in range(1, order + 1):
            for i in range(len(tokens) - n + 1):
                gram = tuple(tokens[i : i + n])
                counts[n - 1][gram] = counts[n - 1].get(gram, 0) + 1
    return counts


def arpa_language_model(
    sentences: list[list[str]], order: int = 3, discount: float = 0.5
) -> tuple[str, dict[tuple[str, ...], float]]:
    """A back-off n-gram language model of `sentences` in ARPA text form, with absolute
    discounting: a seen n-gram keeps its count less `discount`, and the mass taken from a
    context goes to the next lower order through that context's back-off weight.

    Returns the ARPA text and the model's probability (not log) of every listed n-gram.
    """
    if not sentences or not 0 < discount < 1 or order < 1:
        raise DataError("the language model needs sentences, 0 < discount < 1 and order >= 1")
    counts = ngram_counts(sentences, order)
    total = sum(c for (w,), c in counts[0].items() if w != "<s>")
    prob: dict[tuple[str, ...], float] = {
        g: c / total for g, c in counts[0].items() if g != ("<s>",)
    }
    backoff: dict[tuple[str, ...], float] = {}

    def lower(gram: tuple[str, ...]) -> float:
        """P(last word | shorter context) in the model built so far (backing off)."""
        if len(gram) == 1:
            return prob[gram]
        if gram in prob:
            return prob[gram]
        return backoff.get(gram[:-1], 1.0) * lower(gram[1:])

    for n in range(2, order + 1):
        context_total: dict[tuple[str, ...], int] = {}
        followers: dict[tuple[str, ...], list[tuple[str, ...]]] = {}
        for gram, c in counts[n - 1].items():
            context_total[gram[:-1]] = context_total.get(gram[:-1], 0) + c
            followers.setdefault(gram[:-1], []).append(gram)
        for context, grams in followers.items():
            c_h = context_total[context]
            for gram in grams:
                prob[gram] = (counts[n - 1][gram] - discount) / c_h
            left = discount * len(grams) / c_h
            seen_lower = sum(lower(g[1:]) for g in grams)
            backoff[context] = left / (1.0 - seen_lower)
    lines = ["\\data\\"]
    by_order = [[g for g in sorted(counts[n]) if g in prob or n == 0] for n in range(order)]
    lines += [f"ngram {n + 1}={len(grams)}" for n, grams in enumerate(by_order)]
    for n, grams in enumerate(by_order):
        lines += ["", f"\\{n + 1}-grams:"]
        for gram in grams:
            logp = -99.0 if gram == ("<s>",) else np.log10(prob[gram])
            entry = f"{logp:.6f}\t{' '.join(gram)}"
            if n + 1 < order and gram in backoff:
                entry += f"\t{np.log10(backoff[gram]):.6f}"
            lines.append(entry)
    lines += ["", "\\end\\", ""]
    return "\n".join(lines), prob


def pronunciations(words: set[str], dictionary: Path) -> list[str]:
    """The dictionary lines (alternates included) of `words`, in the dictionary's order."""
    _require(dictionary, "pocketsphinx-en-us")
    found: set[str] = set()
    lines = []
    for line in dictionary.read_text(encoding="utf-8", errors="replace").splitlines():
        head = line.split(" ", 1)[0]
        word = head.split("(", 1)[0]
        if word in words:
            lines.append(line)
            found.add(word)
    missing = sorted(words - found)
    if missing:
        raise DataError(f"{missing} are not in {dictionary}: use words the CMU dictionary knows")
    return lines


def jsgf_grammar(sentences: tuple[str, ...] | list[str]) -> str:
    """A JSGF grammar whose one public rule is any of `sentences` (a command set)."""
    bad = [s for s in sentences if not re.fullmatch(r"[a-z']+( [a-z']+)*", s)]
    if bad or not sentences:
        raise DataError(f"grammar sentences must be lower-case words separated by single "
                        f"spaces; fix {bad[:3] or 'the empty list'}")
    return ("#JSGF V1.0;\ngrammar requests;\npublic <request> =\n    "
            + "\n  | ".join(sentences) + ";\n")


def build_speech(
    out: Path, rate: int = 16000, voice: str = "en-us", wpm: int = 140
) -> dict[str, object]:
    """NNN.raw (16 kHz, 16-bit little-endian mono) and transcripts.txt (one per line), and
    the recogniser's domain models built from those transcripts, as a deployed command
    recogniser has them: requests.gram (a JSGF grammar of the sentence set, the default),
    requests.lm (a trigram language model, ARPA) and requests.dict (CMU pronunciations of
    their words)."""
    folder = out / "speech"
    folder.mkdir(parents=True, exist_ok=True)
    espeak = shutil.which("espeak-ng")
    if not espeak:
        raise DataError("espeak-ng is missing: install the Debian package espeak-ng")
    seconds = 0.0
    for i, sentence in enumerate(SENTENCES):
        wav_path = folder / f"{i:03d}.wav"
        subprocess.run(
            [espeak, "-v", voice, "-s", str(wpm), "-w", str(wav_path), sentence],
            check=True,
            capture_output=True,
        )
        with wave.open(str(wav_path)) as w:
            rate_in = w.getframerate()
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
        wav_path.unlink()
        pcm16 = np.clip(_resample(pcm, rate_in, rate), -32768, 32767).astype("<i2")
        seconds += len(pcm16) / rate
        atomic_write_bytes(folder / f"{i:03d}.raw", pcm16.tobytes())
    atomic_write_text(folder / "transcripts.txt", "\n".join(SENTENCES) + "\n")
    sentences = [s.split() for s in SENTENCES]
    arpa, _ = arpa_language_model(sentences)
    atomic_write_text(folder / "requests.lm", arpa)
    atomic_write_text(folder / "requests.gram", jsgf_grammar(SENTENCES))
    vocabulary = {w for words in sentences for w in words}
    dictionary = pronunciations(vocabulary, POCKETSPHINX_MODEL / "cmudict-en-us.dict")
    atomic_write_text(folder / "requests.dict", "\n".join(dictionary) + "\n")
    return {
        "utterances": len(SENTENCES),
        "vocabulary": len(vocabulary),
        "audio_seconds": round(seconds, 1),
        "bytes": _size(folder),
    }


def build_translate(out: Path, extra: int = 480, seed: int = 1) -> dict[str, object]:
    """sentences.txt: our plain sentences and short commands, then one-line fortunes."""
    folder = out / "translate"
    folder.mkdir(parents=True, exist_ok=True)
    short = [t for _, t in read_fortunes() if "\n" not in t and 4 <= len(t.split()) <= 16]
    rng = np.random.default_rng(seed)
    chosen = [
        short[int(i)] for i in rng.choice(len(short), size=min(extra, len(short)), replace=False)
    ]
    sentences = [s.capitalize() + "." for s in SENTENCES + SHORT_COMMANDS] + chosen
    atomic_write_text(folder / "sentences.txt", "\n".join(sentences) + "\n")
    return {"sentences": len(sentences), "bytes": _size(folder)}


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


BUILDERS: dict[str, Callable[[Path], dict[str, object]]] = {
    "search": build_search,
    "imgdnn": build_imgdnn,
    "speech": build_speech,
    "translate": build_translate,
}


def build(out: Path, services: list[str] | None = None) -> dict[str, object]:
    """Builds the data sets of `services` (default all) under `out`; updates manifest.json."""
    chosen = services or list(BUILDERS)
    unknown = [s for s in chosen if s not in BUILDERS]
    if unknown:
        raise DataError(f"no data set for {unknown}; choose from {sorted(BUILDERS)}")
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    manifest: dict[str, object] = (
        json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    )
    for name in chosen:
        manifest[name] = BUILDERS[name](out)
        atomic_write_text(manifest_path, json.dumps(manifest, indent=2) + "\n")
    return manifest
