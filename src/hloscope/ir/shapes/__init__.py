"""Shape inference rules, one module per op family (the entry is ``hloscope.ir.shape_inference``)."""
