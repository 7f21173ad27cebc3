"""The end of every checker here: a FAIL line per fault, else the ok line; the exit code."""


def verdict(faults, ok):
    for f in faults:
        print("FAIL:", f)
    if not faults:
        print(ok)
    return 1 if faults else 0
