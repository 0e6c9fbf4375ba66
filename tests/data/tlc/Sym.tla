---- MODULE Sym ----
\* Three symmetric processes count from 0 to Top; `last` (a model value) is hidden by the VIEW.
EXTENDS Naturals, TLC
CONSTANTS Procs, NoOne, Top
VARIABLES st, last
vars == <<st, last>>
Init == st = [p \in Procs |-> 0] /\ last = NoOne
Step(p) == st[p] < Top /\ st' = [st EXCEPT ![p] = @ + 1] /\ last' = p
Next == \E p \in Procs : Step(p)
Spec == Init /\ [][Next]_vars
Perms == Permutations(Procs)
View == st
====
