#!/usr/bin/python3
"""tools/chorus_sim_plot.py on a small chorus-sim run (Debian's matplotlib: /usr/bin/python3).

  plot_test.py path/to/chorus-sim path/to/chorus_sim_plot.py

chorus-sim writes CSVs (16 and 64 GPUs, uniform fabric, ring/rd/rhd, 4 KiB..4 MiB); the
plot script draws busbw and crossover PNGs from them (--from-csv). Checked beyond the exit
code: each PNG is a valid PNG (signature, IHDR, CRCs, pixels decode) of the expected
size; the series stored in it equal the ones this test computes from the CSVs itself; the
lines are drawn (one matplotlib line colour per algorithm present in the pixels, the next
colour absent).
"""
import csv
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import numpy  # noqa: E402

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def png_chunks(path):
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"\x89PNG\r\n\x1a\n", "%s: PNG signature" % path)
    chunks, at = [], 8
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        crc = struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0]
        check(zlib.crc32(kind + body) & 0xffffffff == crc, "%s: CRC of %s" % (path, kind))
        chunks.append((kind, body))
        at += 12 + length
    check(chunks and chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND",
          "%s: IHDR first, IEND last" % path)
    return chunks


def check_png(path, expected_series, lines):
    chunks = png_chunks(path)
    width, height, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    # figsize 8 x 5 in at 120 dpi (960 x 600), trimmed to the drawing by bbox_inches=tight
    check(700 <= width <= 1100 and 400 <= height <= 700,
          "%s: %d x %d pixels, expected about 960 x 600" % (path, width, height))
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    channels = {2: 3, 6: 4}.get(colour, 0)
    check(depth == 8 and len(raw) == height * (1 + width * channels),
          "%s: pixel data of %d x %d RGB(A)" % (path, width, height))
    texts = dict(body.split(b"\0", 1) for kind, body in chunks if kind == b"tEXt")
    stored = texts.get(b"chorus-sim series")
    check(stored is not None, "%s: no series stored" % path)
    if stored is not None:
        check(json.loads(stored.decode()) == expected_series,
              "%s: series stored %s, from the CSV %s" % (path, stored.decode(), expected_series))
    # The lines: matplotlib's colour cycle, C0, C1, ... one per series drawn.
    pixels = (matplotlib.image.imread(path)[:, :, :3] * 255).round().astype(int)
    for i in range(lines + 1):
        rgb = numpy.array([int(matplotlib.colors.to_hex("C%d" % i)[k:k + 2], 16) for k in (1, 3, 5)])
        count = int((numpy.abs(pixels - rgb).max(axis=2) <= 2).sum())
        if i < lines:
            check(count >= 50, "%s: line colour C%d drawn on %d pixels" % (path, i, count))
        else:
            check(count == 0, "%s: colour C%d on %d pixels, only %d lines" % (path, i, count, lines))


def main():
    sim, plot = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        csvs = []
        for gpus in (16, 64):
            path = os.path.join(tmp, "sim_%d.csv" % gpus)
            subprocess.run([sim, "--fabric", "uniform", "--gpus", str(gpus), "-A", "ring,rd,rhd",
                            "-b", "4K", "-e", "4M", "-f", "4", "--csv", path],
                           check=True, stdout=subprocess.DEVNULL)
            with open(path) as f:
                csvs.append((path, list(csv.DictReader(f))))
        # busbw from the 16-GPU run: per algorithm (bytes, busbw) by size.
        rows = csvs[0][1]
        check(len(rows) == 3 * 6, "16 GPUs: %d rows, expected 3 algorithms x 6 sizes" % len(rows))
        series = {}
        for r in rows:
            series.setdefault(r["algorithm"], []).append([int(r["bytes"]), float(r["busbw"])])
        for pts in series.values():
            pts.sort()
        busbw_png = os.path.join(tmp, "busbw.png")
        subprocess.run(["/usr/bin/python3", plot, "busbw", "--from-csv", csvs[0][0],
                        "-o", busbw_png], check=True, stdout=subprocess.DEVNULL)
        check_png(busbw_png, series, len(series))
        # crossover from both: per cluster size, the largest size where rd or rhd beats ring.
        points = []
        for path, rows in csvs:
            us = {}
            for r in rows:
                us.setdefault(int(r["bytes"]), {})[r["algorithm"]] = float(r["us"])
            beats = [b for b, t in us.items() if min(t["rd"], t["rhd"]) < t["ring"]]
            if beats:
                points.append([int(rows[0]["ranks"]), max(beats)])
        check(len(points) == 2, "rd/rhd beat the ring at small sizes at 16 and 64 GPUs: %s" % points)
        crossover_png = os.path.join(tmp, "crossover.png")
        subprocess.run(["/usr/bin/python3", plot, "crossover", "--fabric", "uniform", "--from-csv",
                        ",".join(p for p, _ in csvs), "-o", crossover_png],
                       check=True, stdout=subprocess.DEVNULL)
        check_png(crossover_png, {"crossover": points}, 1)
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("plots OK")


if __name__ == "__main__":
    main()
