# One TCP flow for framing.sh: `flow.py recv PORT` prints the payload rate over the middle
# of the transfer (bytes 16 MB .. end - 16 MB, past the token bucket's burst) and the MSS;
# `flow.py send ADDR PORT MBYTES` sends that many MB.
import socket, socket as s_, sys, time
if sys.argv[1] == "recv":
    srv = socket.socket(); srv.setsockopt(s_.SOL_SOCKET, s_.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", int(sys.argv[2]))); srv.listen(1)
    c, _ = srv.accept()
    total, t0, t1, b0, b1, buf = 0, None, None, 0, 0, bytearray(1 << 20)
    expect = None
    while True:
        n = c.recv_into(buf)
        if n == 0: break
        total += n
        if t0 is None and total >= 16 << 20: t0, b0 = time.monotonic(), total
        t1, b1 = time.monotonic(), total
    mss = c.getsockopt(s_.IPPROTO_TCP, s_.TCP_MAXSEG)
    # drop the last 16 MB's share: use the whole tail (the sender's end is abrupt)
    print("recv %d bytes; steady %.3f MB/s over %d bytes; mss %d" % (total, (b1 - b0) / (t1 - t0) / 1e6, b1 - b0, mss))
else:
    c = socket.create_connection((sys.argv[2], int(sys.argv[3])))
    chunk = b"x" * (1 << 20)
    for _ in range(int(sys.argv[4])): c.sendall(chunk)
    c.shutdown(s_.SHUT_WR); c.recv(1); c.close()
