"""What tests, tools and benchmarks share: the architecture checks, and (as they move here) one
case type, one XLA runner and one tolerance table.

Nothing in the library imports this package; it is a face for the project's own checks and for
users who test their modules against XLA.
"""
