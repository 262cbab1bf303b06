"""Mutation fuzzing of the HLO parser: every mutated seed must parse or fail with a ParseError.

Mutations work on the lexer's tokens of the seed modules: delete, duplicate, swap with a
neighbour, replace with a token from elsewhere, insert a random punctuation mark, or truncate.
Run by hand for a long campaign::

    python tests/text/fuzz_parser.py --cases 10000 --seed 1

The test suite runs a few hundred cases (tests/text/test_fuzz.py).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

SEEDS = Path(__file__).resolve().parents[1] / "data" / "seeds"
PUNCT = list("{}[](),=:;<>?*%\"/") + ["->", "<=", "ROOT", "ENTRY", "-1", "0", "99999999999999999999", "nan", "..."]


def seed_texts(max_bytes: int = 60_000) -> list[tuple[str, str]]:
    """(name, text) of the module seeds; the big one is cut to its first computations."""
    out = []
    for p in sorted(SEEDS.glob("0*.txt")):
        text = p.read_text()
        if not text.startswith("HloModule"):
            continue
        if len(text) > max_bytes:
            cut = text.rfind("\n}\n", 0, max_bytes)
            text = text[: cut + 3]
        out.append((p.name, text))
    return out


def mutate(text: str, rng: random.Random) -> str:
    from hloscope.source import Source
    from hloscope.text.lexer import lex

    ts = lex(Source(text))
    toks = [t for t in ts.toks if t]
    wss = [ts.ws(i) for i in range(len(toks))]
    n = len(toks)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        i = rng.randrange(n)
        kind = rng.randrange(6)
        if kind == 0:
            toks[i] = ""
        elif kind == 1:
            toks[i] = toks[i] + " " + toks[i]
        elif kind == 2 and i + 1 < n:
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
        elif kind == 3:
            toks[i] = toks[rng.randrange(n)]
        elif kind == 4:
            toks[i] = toks[i] + rng.choice(PUNCT)
        else:
            toks = toks[:i]
            wss = wss[:i]
            n = len(toks)
            if n == 0:
                break
    return "".join(w + t for w, t in zip(wss, toks))


def run(cases: int, seed: int, verbose: bool = False) -> list[tuple[str, str, BaseException]]:
    """Run ``cases`` mutations; returns failures (mutated text, name, unexpected exception)."""
    from hloscope.errors import ParseError
    from hloscope.text.parser import parse_module

    rng = random.Random(seed)
    texts = seed_texts()
    failures = []
    for k in range(cases):
        name, text = texts[k % len(texts)]
        mutated = mutate(text, rng)
        try:
            parse_module(mutated, name)
        except ParseError as e:
            str(e)  # rendering the message must not fail either
        except Exception as e:  # noqa: BLE001 - any other exception is a finding
            failures.append((mutated, name, e))
            if verbose:
                print(f"case {k}: {type(e).__name__}: {e}", file=sys.stderr)
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", metavar="DIR", help="write each failing input to DIR")
    args = ap.parse_args()
    t0 = time.perf_counter()
    failures = run(args.cases, args.seed, verbose=True)
    dt = time.perf_counter() - t0
    print(f"{args.cases} cases in {dt:.1f} s: {len(failures)} unexpected exceptions")
    if args.save and failures:
        d = Path(args.save)
        d.mkdir(parents=True, exist_ok=True)
        for i, (text, _, _) in enumerate(failures):
            (d / f"failure_{i}.hlo").write_text(text)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
