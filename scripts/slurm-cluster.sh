#!/usr/bin/env bash
# A live single-node SLURM cluster on this machine, for the SLURM workflow test (tests/test_slurm.py) and for
# trying profiles/slurm by hand: Debian's munge, slurmctld and slurmd, no accounting database (the executor
# plugin is told to poll `squeue`; finished jobs stay visible to it for MinJobAge = 300 s, and every finished
# job is also written to the job-completion log below).
#
#   scripts/slurm-cluster.sh start    # as root: install the packages if missing, write slurm.conf, start, wait
#   scripts/slurm-cluster.sh status   # exit 0 when the controller answers and the node takes jobs
#   scripts/slurm-cluster.sh stop
#
# slurm.conf is generated from this machine (`slurmd -C`: real hostname, CPUs, sockets, cores, RealMemory), with
# one partition `rankbench` and consumable CPUs and memory, so `--cpus-per-task` and `--mem` are what the
# scheduler allocates. It goes to /etc/slurm/slurm.conf; a slurm.conf this script did not write is never replaced.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# written by rankbench scripts/slurm-cluster.sh"
STATE=/var/spool/rankbench-slurm
LOGS=/var/log/rankbench-slurm
JOBCOMP=$LOGS/jobcomp.log
PACKAGES=(munge slurmctld slurmd slurm-client)

die() { echo "slurm-cluster: $*" >&2; exit 1; }

need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root (it installs packages and starts system daemons)"; }

install_packages() {
    local missing=()
    for package in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2> /dev/null | grep -q "ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} = 0 ] && return
    echo "slurm-cluster: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
}

write_conf() {
    if [ -e "$CONF" ] && ! head -1 "$CONF" | grep -qF "$MARK"; then
        die "$CONF exists and was not written by this script; not replacing it (move it away to use this cluster)"
    fi
    local node host
    node=$(slurmd -C | head -1)  # NodeName=<host> CPUs=.. Boards=.. SocketsPerBoard=.. CoresPerSocket=.. ThreadsPerCore=.. RealMemory=..
    host=$(hostname -s)
    mkdir -p "$(dirname "$CONF")" "$STATE/ctld" "$STATE/d" "$LOGS"
    chown slurm:slurm "$STATE/ctld" "$LOGS"
    cat > "$CONF" << EOF
$MARK; do not edit: it is rewritten on every start
ClusterName=rankbench
SlurmctldHost=$host
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=/run/rankbench-slurmctld.pid
SlurmdPidFile=/run/rankbench-slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$JOBCOMP
MinJobAge=300
$node State=UNKNOWN
PartitionName=rankbench Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    chmod 644 "$CONF"
}

start_munge() {
    if [ -s /run/munge/munged.pid ] && kill -0 "$(cat /run/munge/munged.pid)" 2> /dev/null; then
        return
    fi
    [ -s /etc/munge/munge.key ] || { mungekey --create --force; chown munge:munge /etc/munge/munge.key; }
    chmod 400 /etc/munge/munge.key
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod 755 /run/munge
    runuser -u munge -- /usr/sbin/munged
}

cluster_up() {
    scontrol ping 2> /dev/null | grep -q "is UP" && sinfo -h -o %T 2> /dev/null | grep -Eq "^(idle|mixed|allocated)"
}

start() {
    need_root start
    if cluster_up; then
        echo "slurm-cluster: already up"
        sinfo
        return
    fi
    local began installed
    began=$(date +%s.%N)
    install_packages
    installed=$(date +%s.%N)
    write_conf
    start_munge
    # -c: clear saved state (no jobs or node states left from an earlier run).
    slurmctld -c
    slurmd
    for _ in $(seq 120); do
        if cluster_up; then
            awk -v began="$began" -v installed="$installed" -v now="$(date +%s.%N)" 'BEGIN {
                printf "slurm-cluster: up in %.1f s after %.1f s of package install\n", now - installed, installed - began }'
            sinfo
            return
        fi
        sleep 0.5
    done
    tail -20 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
    die "the cluster did not come up within 60 s (logs above)"
}

stop() {
    need_root stop
    scontrol shutdown 2> /dev/null || true
    for _ in $(seq 60); do
        pgrep -F /run/rankbench-slurmctld.pid > /dev/null 2>&1 || pgrep -F /run/rankbench-slurmd.pid > /dev/null 2>&1 \
            || break
        sleep 0.5
    done
    if [ -s /run/munge/munged.pid ]; then
        kill "$(cat /run/munge/munged.pid)" 2> /dev/null || true
    fi
    echo "slurm-cluster: stopped"
}

status() {
    if cluster_up; then
        sinfo
        echo "job-completion log: $JOBCOMP"
    else
        echo "slurm-cluster: not up (start it with: sudo $0 start)"
        return 1
    fi
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) die "usage: $0 start|stop|status" ;;
esac
