"""Differential fuzzing of hloscope against XLA: random small HLO modules, compared stage by stage.

The generator (``generate(seed)``) builds a random, well-typed module in HLO text from the opcode
families of ``hloscope.ir.opcode`` and the type rules of XLA's ``ShapeInference``: elementwise ops
on every element type XLA:CPU has, compare, convert, bitcast-convert, data movement, reduce,
reduce-window, dot, convolution, gather, scatter, sort, map, while, conditional and tuples. Inputs
are seeded too and lean on edge values (0, -0.0, ±inf, NaN, INT_MIN, -1, maxima, subnormals).
About one module in five carries one deliberate mistake (``Case.mutation``) so that the verifier
is compared with XLA on invalid modules as well. A seed reproduces its module and inputs exactly.

The runner (``check_case``) compares hloscope with XLA, one check per letter:

a. hloscope parses the module and prints it; XLA's parser accepts the printed text and reads it
   as the same module it reads from the original text (XLA's printing of both is equal);
b. hloscope's verifier and XLA agree on validity (Note [XLA's verdict]);
c. hloscope's ``infer_shape`` of every instruction equals the shape XLA's parser infers when the
   shape is left out of the text (Note [Shapeless text]);
d. ``hloscope.cost`` equals XLA's ``hlo_module_cost_analysis`` (FLOPs, transcendentals, bytes);
e. ``hloscope.run`` equals XLA:CPU's execution (Note [Comparing outputs]).

Every XLA call happens in a child process (``hloscope.testing.xla_worker.XlaWorker``), because XLA aborts the process on
internal CHECK failures; an abort is counted as such and the child is restarted.

Note [Shapeless text]
    XLA's parser infers an instruction's shape with ``ShapeInference`` when the text leaves it
    out, for the opcodes in ``PARSER_INFERS`` (others have no inference there and would crash
    it). The generator writes each module twice: with shapes, as usual, and with the shapes of
    those instructions left out. XLA's printing of the second is XLA's own shape inference.

Note [XLA's verdict]
    XLA's parser does not verify; XLA's verifier runs only when a module is compiled. Without
    compiling, XLA holds a module invalid when the shapeless text fails to parse (its shape
    inference rejected an instruction) or an inferred shape differs from the declared one (the
    verifier's first check). The parser's inference is laxer than XLA:CPU (it ignores float
    precision, and never sees declared-only shapes such as a dot's preferred type or a
    slice's), so whenever hloscope rejects a module the parser accepted, and for every module
    with ``--compile`` or check e, XLA:CPU compiles it: refusing it in its StableHLO conversion
    or its verifier makes it invalid. One verifier rule is taken as written, because XLA:CPU
    folds empty or constant compares away before checking it: a compare's ``type=`` must fit
    its operands (FLOAT or TOTALORDER for floats, else the element type's default); likewise
    the ban on mixed float precision for an instruction with an empty operand or result.

Note [Comparing outputs]
    The entry's root is a tuple of every instruction's value, so a difference is pinned on the
    first instruction whose result differs while its operands agree. Integers and pred must be
    bit-exact, data movement bit-exact (NaNs compared as NaNs), floating-point arithmetic within
    the project's per-dtype tolerances (``hloscope.testing.tolerances``). XLA:CPU may reorder
    low-precision arithmetic (Note [Legitimate differences]). An exact operation (compare,
    convert, max, data movement) on operands that already differ in rounding is compared with a
    tolerance when its result is floating point and not at all when it is an integer or pred.

Note [Legitimate differences]
    Differences that are XLA:CPU's choices rather than hloscope's bugs:
    * XLA:CPU runs with subnormals flushed to zero (FTZ/DAZ). A subnormal against a zero of its
      sign is no difference, and a difference that goes away when the inputs' subnormals are
      flushed is only noted (``xla-cpu-flushes-subnormal-inputs``).
    * Reductions may be reordered (bf16/fp8 sums differ by more than rounding), and an init
      value may be applied any number of times (so it must be an identity: the generator's are).
    * With constant inputs XLA folds with its evaluator instead of compiling; ``describe_repro``
      runs a reduced case both ways, so a repro says whether XLA's own two paths agree.

The package, by stage: ``model`` (types, the generated module, values), ``generator`` and ``ops``
(building modules), ``checks`` (checks a-e and comparing outputs), ``reduce`` (minimising a
failure), ``campaign`` (many seeds); ``tools/fuzz_hlo.py`` is the command line.
"""
from hloscope.testing.fuzz.campaign import campaign
from hloscope.testing.fuzz.checks import (
    Failure,
    Outcome,
    check_case,
    compare_arrays,
    leaves_of,
    producer_of,
    run_hloscope,
)
from hloscope.testing.fuzz.model import ALL_TYPES, PARSER_INFERS, Case, random_values
from hloscope.testing.fuzz.ops import generate
from hloscope.testing.fuzz.reduce import describe_repro, reduce_case, repro_text
from hloscope.testing.xla_worker import XlaWorker

__all__ = [
    "ALL_TYPES", "Case", "Failure", "Outcome", "PARSER_INFERS", "XlaWorker", "campaign",
    "check_case", "compare_arrays", "describe_repro", "generate", "leaves_of", "producer_of",
    "random_values", "reduce_case", "repro_text", "run_hloscope",
]
