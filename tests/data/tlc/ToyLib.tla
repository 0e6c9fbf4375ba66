---- MODULE ToyLib ----
\* A sibling module EXTENDed by Toy: checks that TLC finds modules next to the spec.
EXTENDS Integers
Entry(n, v) == [v |-> v, s |-> "a\"b\\c", m |-> {n}, t |-> <<-1, TRUE>>]
====
