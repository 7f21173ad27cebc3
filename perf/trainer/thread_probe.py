#!/usr/bin/python3
"""perf/trainer/thread_probe.py BUILD OUT [FLAGS...]: run one np=4 chorus-train job (default model) and sample its threads: CPU used per thread, the core each ran on,
and how much of the 2 cores went to processes that are not ours (from /proc/stat)."""
import json, os, subprocess, sys, time, collections
build, out = sys.argv[1], sys.argv[2]
extra = sys.argv[3:]
HZ = os.sysconf("SC_CLK_TCK")
def cpustat():
    d = {}
    for line in open("/proc/stat"):
        if line.startswith("cpu") and line[3].isdigit():
            f = line.split(); v = list(map(int, f[1:8]))
            v = list(map(int, f[1:9])); d[f[0]] = (sum(v), v[3] + v[4], v[7])  # total, idle+iowait, steal
    return d
def ppid(pid):
    try: return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except Exception: return -1
env = dict(os.environ, **dict(x.split("=", 1) for x in extra if "=" in x and x[0].isupper()))
flags = [x for x in extra if not ("=" in x and x[0].isupper())]
trainer = flags.pop(0) if flags and flags[0].startswith("/") else f"{build}/examples/dp_trainer/chorus-train"
cmd = [f"{build}/tools/chorus-run", "-n", "4", trainer, "--hidden", "1024", "--layers", "3",
       "--batch", "64", "--steps", "20", "--eval-every", "0", "--quiet", "--out", out] + flags
s0 = cpustat(); t0 = time.time()
p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
samples = collections.defaultdict(collections.Counter)   # (pid,tid) -> Counter(cpu)
last = {}
kids = []
nsamp = 0
while p.poll() is None:
    if len(kids) < 4:
        kids = [int(x) for x in os.listdir("/proc") if x.isdigit() and ppid(int(x)) == p.pid]
    for pid in kids:
        try: tids = os.listdir(f"/proc/{pid}/task")
        except Exception: continue
        for tid in tids:
            try:
                st = open(f"/proc/{pid}/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                ss = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
                aff = open(f"/proc/{pid}/task/{tid}/status").read().split("Cpus_allowed_list:")[1].split()[0]
            except Exception: continue
            if st[0] == "R": samples[(pid, int(tid))][int(st[36])] += 1
            last[(pid, int(tid))] = (int(ss[0]) / 1e9, int(ss[1]) / 1e9, int(ss[2]), aff)
    nsamp += 1
    time.sleep(0.002)
t1 = time.time(); s1 = cpustat()
text = p.stdout.read().decode()
rep = json.load(open(f"{out}/report.json"))
ours = sum(v[0] for v in last.values())
busy = {c: round((s1[c][0] - s0[c][0] - (s1[c][1] - s0[c][1])) / HZ, 2) for c in s1}
steal = {c: (s1[c][2] - s0[c][2]) / HZ for c in s1}
res = dict(sps=rep["samples_per_second"], hidden=rep["allreduce_hidden_fraction"], wall=t1 - t0,
           ours_cpu_s=ours, cores_busy_s=busy, steal_s=steal, nsamples=nsamp, exposed_ms=1e3*rep["step_seconds"]["exposed_comm"], slowest_ms=1e3*rep["step_seconds"]["exposed_comm_waiting_for_slowest_backward"], transfer_ms=1e3*rep["step_seconds"]["exposed_comm_transfer"], compute_ms=1e3*rep["step_seconds"]["compute"], allreduce_ms=1e3*rep["allreduce_seconds_per_step"], load=os.getloadavg()[0])
print(json.dumps(res))
for k in sorted(last):
    run, wait, n, aff = last[k]
    print(f"  pid {k[0]} tid {k[1]} aff {aff:5s} run {run:6.3f}s runq-wait {wait:6.3f}s slices {n:6d} R-samples on cpu {dict(samples[k])}")
