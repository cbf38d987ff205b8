# Reads a run document on stdin with the PyPI iperf3 package's TestResult
# (what scripts written for iperf3 -J use) and prints, as JSON, the figures
# it read. An exception (a key it needs is missing or of another type)
# exits non-zero with Python's traceback.
import json
import sys

import iperf3

r = iperf3.TestResult(sys.stdin.read())
if r.error:
    print(json.dumps({"error": r.error}))
    sys.exit(0)
names = ["time", "timesecs", "system_info", "version", "local_host", "local_port", "remote_host",
         "remote_port", "tcp_mss_default", "protocol", "num_streams", "blksize", "omit", "duration",
         "local_cpu_total", "local_cpu_user", "local_cpu_system", "remote_cpu_total", "remote_cpu_user",
         "remote_cpu_system", "reverse", "type"]
if r.protocol == "TCP":
    names += ["sent_bytes", "sent_bps", "received_bytes", "received_bps", "received_Mbps", "retransmits"]
else:
    names += ["bytes", "bps", "Mbps", "jitter_ms", "packets", "lost_packets", "lost_percent", "seconds"]
print(json.dumps({n: getattr(r, n) for n in names}))
