#!/usr/bin/python3
"""perf/trainer/autogroup_hog.py BUILD REPS [OUT]: np=4 chorus-train runs (thread_probe.py), alternating:
nothing added / one busy loop in another autogroup (a new session) / one in this session's.
Shows that with sched_autogroup_enabled=1 one other busy session halves the job's CPU
(perf/trainer/README.md, eighth pass)."""
import json, os, subprocess, sys, time
build, reps = sys.argv[1], int(sys.argv[2])
out = sys.argv[3] if len(sys.argv) > 3 else "/tmp/autogroup-hog"
os.makedirs(out, exist_ok=True)
HERE = os.path.dirname(os.path.abspath(__file__))
HOG = ["/usr/bin/python3", "-c", "while True: pass"]
res = {"none": [], "other-group": [], "same-group": []}
for rep in range(reps):
    for arm in res:
        hog = None
        if arm != "none":
            hog = subprocess.Popen(HOG, start_new_session=(arm == "other-group"))
            time.sleep(0.3)
            grp = open(f"/proc/{hog.pid}/autogroup").read().strip()
        text = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "thread_probe.py"), build, os.path.join(out, arm)],
                             stdout=subprocess.PIPE, text=True).stdout
        if hog: hog.kill(); hog.wait()
        r = json.loads(text.splitlines()[0])
        r["arm"] = arm; r["me"] = open("/proc/self/autogroup").read().strip()
        if hog: r["hog_group"] = grp
        res[arm].append(r)
        print(arm, f"sps {r['sps']:.0f} hidden {r['hidden']:.3f} our cores {r['ours_cpu_s']/r['wall']:.2f} load {r['load']:.1f}", r.get("hog_group", ""), flush=True)
import statistics as st
for arm, rs in res.items():
    print(arm, "median sps", st.median(x["sps"] for x in rs), "hidden", st.median(x["hidden"] for x in rs),
          "our cores", round(st.median(x["ours_cpu_s"] / x["wall"] for x in rs), 3))
json.dump(res, open(os.path.join(out, "hog.json"), "w"), indent=1)
