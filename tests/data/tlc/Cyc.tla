---- MODULE Cyc ----
\* One variable (TLC prints `x = 0` without `/\ `) cycling 0, 1, 2, 0, ... under weak fairness.
EXTENDS Integers
VARIABLE x
Init == x = 0
Next == x' = (x + 1) % 3
Spec == Init /\ [][Next]_x /\ WF_x(Next)
ReachFive == <>(x = 5)
====
