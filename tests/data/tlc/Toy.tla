---- MODULE Toy ----
\* Toy spec for tests/test_tlc.py: a counter climbs to Max, nodes append one entry each, and crash.
EXTENDS Integers, Sequences, ToyLib
CONSTANTS Nodes, Max
VARIABLES x, log, up
vars == <<x, log, up>>

Init == /\ x = 0
        /\ log = [n \in Nodes |-> <<>>]
        /\ up = Nodes
Inc == x < Max /\ x' = x + 1 /\ UNCHANGED <<log, up>>
Add(n) == /\ n \in up
          /\ log[n] = <<>>
          /\ log' = [log EXCEPT ![n] = Append(@, Entry(n, x))]
          /\ UNCHANGED <<x, up>>
Crash(n) == /\ n \in up
            /\ up' = up \ {n}
            /\ UNCHANGED <<x, log>>
Next == Inc \/ (\E n \in Nodes : Add(n)) \/ (\E n \in Nodes : Crash(n))
Spec == Init /\ [][Next]_vars

TypeOK == x \in 0..Max /\ up \subseteq Nodes /\ \A n \in Nodes : Len(log[n]) <= 1
\* Violated after three steps: Inc, then Add(n) and Crash(n) of the same node.
Quiet == ~(x = 1 /\ \E n \in Nodes : n \notin up /\ log[n] /= <<>>)
UpStable == [][up' = up]_up
CounterGrows == [][x' >= x]_x
AllDown == <>(up = {})
====
