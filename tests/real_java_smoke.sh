#!/usr/bin/env bash
# Manual smoke test for rmqha/real/java/RmqhaTool.java against a REAL RocketMQ 5 cluster
# (1 nameserver, 1 DLedger controller, 3 brokers of one set in controller mode) on 127.0.0.1.
# Not a pytest: it starts JVMs, takes ~2-3 minutes and needs ~2 GB RAM.
#
#   tests/real_java_smoke.sh [CP_FILE]        full run: compile, start, observe, topic, produce/consume,
#                                             kill -9 the master, check failover, stop everything
#   tests/real_java_smoke.sh up [CP_FILE]     only compile + start the cluster (state in $RMQHA_SMOKE_DIR)
#   tests/real_java_smoke.sh down             stop a cluster started with `up`
#
# CP_FILE: a resolved RocketMQ classpath (default /tmp/rmqpom/cp.txt, i.e. 5.3.3; a copy of that pom with
# rmq.version changed gives another version).  Ports: BASE (default 40800) + 76 (nameserver), +80 (controller),
# +09..+12 / +19..+22 / +29..+32 (brokers b0/b1/b2: fast-remoting, listen, HA), all within 40000-40999.
# Everything this script starts is killed on exit (trap), also on failure.
set -u -o pipefail

MODE=all
case "${1:-}" in up|down|all) MODE=$1; shift ;; esac
CPF=${1:-/tmp/rmqpom/cp.txt}
BASE=${BASE:-40800}
D=${RMQHA_SMOKE_DIR:-/tmp/rmqha-smoke-$BASE}
SRC=$(cd "$(dirname "$0")/.." && pwd)/rmqha/real/java/RmqhaTool.java
NS=127.0.0.1:$((BASE + 76))
CTL=127.0.0.1:$((BASE + 80))
BRK=(127.0.0.1:$((BASE + 11)) 127.0.0.1:$((BASE + 21)) 127.0.0.1:$((BASE + 31)))
JOPTS=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto)

log() { printf '%s [smoke] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

stop_all() {
    [ -f "$D/pids" ] || return 0
    while read -r pid name; do
        if kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null; fi
    done < "$D/pids"
    sleep 2
    while read -r pid name; do
        if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null; fi
    done < "$D/pids"
    rm -f "$D/pids"
}

if [ "$MODE" = down ]; then stop_all; exit 0; fi

[ -f "$CPF" ] || die "no classpath file $CPF"
CP=$(cat "$CPF")
if [ -f "$D/pids" ]; then stop_all; fi
rm -rf "$D"; mkdir -p "$D/out"
[ "$MODE" = all ] && trap 'stop_all' EXIT INT TERM

track() { echo "$1 $2" >> "$D/pids"; }

log "compiling $SRC against $CPF"
t0=$(date +%s%N)
javac -Xlint:all -Werror -d "$D/out" -cp "$CP" "$SRC" || die "javac"
log "javac took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
TCP="$D/out:$CP"

# tool CMD ...: one-shot tool run (stdin EOF would stop it at once, so --no-stdin-watch)
tool() { java "${JOPTS[@]}" -Xmx256m -cp "$TCP" rmqha.tool.RmqhaTool "$@" --log-dir "$D/toollogs" --no-stdin-watch </dev/null; }
# tool_bg NAME CMD ...: background tool run, stdout to $D/NAME.jsonl, its stdin a fifo we close to stop it
tool_bg() {
    local name=$1; shift
    mkfifo "$D/$name.in"
    java "${JOPTS[@]}" -Xmx256m -cp "$TCP" rmqha.tool.RmqhaTool "$@" --log-dir "$D/toollogs" \
        < "$D/$name.in" > "$D/$name.jsonl" 2> "$D/$name.err" &
    track $! "$name"
    exec {fd}> "$D/$name.in"   # hold the write end open
    eval "FD_$name=$fd"
}
tool_stop() { local v="FD_$1"; eval "exec ${!v}>&-"; }   # closing stdin = stop request

mkdir -p "$D/ns" "$D/ctl"
cat > "$D/ns/ns.conf" <<EOF
listenPort=$((BASE + 76))
bindAddress=127.0.0.1
EOF
cat > "$D/ctl/ctl.conf" <<EOF
controllerDLegerGroup=g1
controllerDLegerPeers=n0-$CTL
controllerDLegerSelfId=n0
controllerStorePath=$D/ctl/store
enableElectUncleanMaster=false
notifyBrokerRoleChanged=true
EOF
java "${JOPTS[@]}" -Xms128m -Xmx256m -Drocketmq.home.dir="$D" -Duser.home="$D/ns" -cp "$CP" \
    org.apache.rocketmq.namesrv.NamesrvStartup -c "$D/ns/ns.conf" > "$D/ns/out.log" 2>&1 &
track $! namesrv
java "${JOPTS[@]}" --add-opens java.base/java.lang=ALL-UNNAMED -Xms128m -Xmx256m -Drocketmq.home.dir="$D" \
    -Duser.home="$D/ctl" -cp "$CP" org.apache.rocketmq.controller.ControllerStartup -c "$D/ctl/ctl.conf" \
    > "$D/ctl/out.log" 2>&1 &
track $! controller
for i in 0 1 2; do
    b=$D/b$i; mkdir -p "$b"
    cat > "$b/b.conf" <<EOF
brokerClusterName=c1
brokerName=bs1
brokerId=-1
enableControllerMode=true
controllerAddr=$CTL
namesrvAddr=$NS
listenPort=$((BASE + 11 + 10 * i))
haListenPort=$((BASE + 12 + 10 * i))
bindAddress=127.0.0.1
brokerIP1=127.0.0.1
brokerIP2=127.0.0.1
storePathRootDir=$b/store
storePathCommitLog=$b/store/commitlog
mappedFileSizeCommitLog=16777216
allAckInSyncStateSet=true
flushDiskType=ASYNC_FLUSH
EOF
    java "${JOPTS[@]}" -Xms128m -Xmx320m -XX:MaxDirectMemorySize=256m -Drocketmq.home.dir="$D" -Duser.home="$b" \
        -cp "$CP" org.apache.rocketmq.broker.BrokerStartup -c "$b/b.conf" > "$b/out.log" 2>&1 &
    track $! "broker$i"
done
log "cluster starting in $D (ns $NS, controller $CTL, brokers ${BRK[*]})"

# wait for a master with a 3-member SyncStateSet
MASTER=""
for _ in $(seq 1 60); do
    sleep 3
    snap=$(tool observe --controllers "$CTL" --set bs1 --once 2>/dev/null | grep '"k":"ctl"')
    MASTER=$(python3 -c '
import json,sys
for l in sys.stdin:
    o=json.loads(l); s=o.get("set") or {}
    if o.get("ok") and s.get("masterAddress") and len(s.get("syncStateSet",[]))==3: print(s["masterAddress"])
' <<< "$snap")
    [ -n "$MASTER" ] && break
done
[ -n "$MASTER" ] || die "no master with SSS of 3: $snap"
log "master $MASTER"
if [ "$MODE" = up ]; then log "cluster up; stop it with: $0 down"; exit 0; fi

log "observe --once:"
tool observe --controllers "$CTL" --set bs1 --brokers "$(IFS=,; echo "${BRK[*]}")" --once | tee "$D/observe1.jsonl" | cut -c1-400

log "admin update-topic / controller-config:"
tool admin update-topic --addr "$MASTER" --topic T1 --queues 4 | tee "$D/admin.jsonl" || die "update-topic"
grep -q '"ok":true' "$D/admin.jsonl" || die "update-topic not ok"
tool admin controller-config --controllers "$CTL" | cut -c1-300
sleep 12   # let the master's next name-server registration carry the topic (broker registers every 30 s; topic
           # creation on the broker triggers a register, but give it time)

log "produce 10 s + consume"
tool_bg consume consume --namesrv "$NS" --topic T1 --group smoke_c --interval-ms 200 --deadline-ms 200000
tool_bg produce1 produce --namesrv "$NS" --topic T1 --group smoke_p --interval-ms 20 --size 128 --key-prefix a \
    --deadline-ms 10000
wait_file_line() { for _ in $(seq 1 "$3"); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 1; done; return 1; }
wait_file_line "$D/produce1.jsonl" '"k":"end"' 30 || die "produce1 did not end"
python3 - "$D/produce1.jsonl" <<'EOF' || die "produce1 check"
import json,sys,collections
rs=[json.loads(l) for l in open(sys.argv[1]) if '"send-result"' in l]
c=collections.Counter(r["status"] for r in rs); print("produce1 statuses", dict(c), file=sys.stderr)
ok=[r for r in rs if r["status"]=="SEND_OK"]
assert ok and all("commitLogOffset" in r and "queueOffset" in r for r in ok)
assert sorted({r["queue"] for r in ok})==[0,1,2,3], {r["queue"] for r in ok}
EOF

log "kill -9 master $MASTER during produce"
tool_bg produce2 produce --namesrv "$NS" --topic T1 --group smoke_p2 --interval-ms 50 --size 128 --key-prefix b \
    --deadline-ms 120000 --route-refresh-ms 2000
tool_bg observe observe --controllers "$CTL" --set bs1 --brokers "$(IFS=,; echo "${BRK[*]}")" --interval-ms 1000 \
    --deadline-ms 120000
for _ in $(seq 1 90); do   # kill only once the producer is steadily getting SEND_OK (JVM starts are slow under load)
    [ "$(grep -c '"SEND_OK"' "$D/produce2.jsonl" 2>/dev/null)" -ge 20 ] && break; sleep 1
done
mpid=$(grep " broker$(( (${MASTER##*:} - BASE - 11) / 10 ))\$" "$D/pids" | cut -d' ' -f1)
KILL_T=$(date +%s%3N); kill -9 "$mpid"; log "killed pid $mpid at $KILL_T"
NEWM=""
for _ in $(seq 1 60); do
    sleep 1
    NEWM=$(grep '"k":"ctl"' "$D/observe.jsonl" | tail -1 | python3 -c '
import json,sys
for l in sys.stdin:
    s=(json.loads(l).get("set") or {}); m=s.get("masterAddress")
    if m and m!=sys.argv[1]: print(m, s.get("masterEpoch"), s.get("syncStateSet"))' "$MASTER")
    [ -n "$NEWM" ] && break
done
[ -n "$NEWM" ] || die "no new master"
log "new master (addr epoch SSS): $NEWM"
# wait for SEND_OK after the kill
for _ in $(seq 1 90); do
    sleep 1
    python3 - "$D/produce2.jsonl" "$KILL_T" <<'EOF' && break
import json,sys
t=int(sys.argv[2]); rs=[json.loads(l) for l in open(sys.argv[1]) if '"send-result"' in l]
after=[r for r in rs if r["t"]>t]
sys.exit(0 if any(r["status"]=="SEND_OK" for r in after) and after[-1]["status"]=="SEND_OK" else 1)
EOF
done
sleep 3
tool_stop produce2; tool_stop observe
wait_file_line "$D/produce2.jsonl" '"k":"end"' 20 || die "produce2 did not end on stdin EOF"
python3 - "$D/produce2.jsonl" "$KILL_T" <<'EOF' || die "failover check"
import json,sys
t=int(sys.argv[2]); rs=[json.loads(l) for l in open(sys.argv[1]) if '"send-result"' in l]
after=[r for r in rs if r["t"]>=t]
errs=[r for r in after if r["status"]!="SEND_OK"]
ok_after=[r for r in after if r["status"]=="SEND_OK"]
first_ok_new=next((r for r in ok_after if errs and r["t"]>errs[0]["t"]), None)
print("after kill: %d results, %d not SEND_OK, statuses/errors seen:" % (len(after), len(errs)), file=sys.stderr)
seen=set()
for r in errs:
    s=(r["status"], r.get("error","")[:110], r.get("addr"))
    if s not in seen: seen.add(s); print("   ", r["t"]-t, "ms", s, file=sys.stderr)
if first_ok_new: print("first SEND_OK after errors: +%d ms on %s (%s)" % (first_ok_new["t"]-t, first_ok_new.get("addr"), first_ok_new["broker"]), file=sys.stderr)
assert ok_after and after[-1]["status"]=="SEND_OK"
EOF

log "waiting for the consumer to see every acked key"
sleep 10
tool_stop consume
wait_file_line "$D/consume.jsonl" '"k":"end"' 20 || die "consume did not end on stdin EOF"
python3 - "$D" <<'EOF' || die "consume check"
import json,sys,glob
d=sys.argv[1]
acked={}
for f in ("produce1","produce2"):
    for l in open(f"{d}/{f}.jsonl"):
        o=json.loads(l)
        if o["k"]=="send-result" and o["status"]=="SEND_OK": acked[o["key"]]=o
seen={}
for l in open(f"{d}/consume.jsonl"):
    o=json.loads(l)
    if o["k"]=="seen": seen.setdefault(o["key"],[]).append(o)
missing=[k for k in acked if k not in seen]
mism=[k for k,a in acked.items() if k in seen and not any(s["queue"]==a["queue"] and s["queueOffset"]==a["queueOffset"] for s in seen[k])]
kinds={}
for l in open(f"{d}/consume.jsonl"):
    o=json.loads(l); kinds[o["k"]]=kinds.get(o["k"],0)+1
print("acked %d, seen %d distinct keys, missing %d, position mismatches %d, lines %s" % (len(acked), len(seen), len(missing), len(mism), kinds), file=sys.stderr)
assert not missing, missing[:10]
EOF
log "OK"
