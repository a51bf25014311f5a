import json

from sandgym_harness import workspace

logstats = workspace.module("logstats")

LINE = '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326'


def cli(stdin):
    return workspace.run(["python3", "logstats.py"], stdin=stdin, timeout=30)


def test_parse_line():
    assert logstats.parse_line(LINE) == {"ip": "127.0.0.1", "time": "2000-10-10T13:55:36-07:00", "method": "GET",
                                         "path": "/apache_pb.gif", "status": 200, "bytes": 2326}


def test_parse_dash_bytes_and_positive_offset():
    d = logstats.parse_line('10.0.0.2 - - [01/Feb/2024:00:00:01 +0530] "POST /api HTTP/1.1" 304 -')
    assert d["bytes"] == 0 and d["status"] == 304 and d["time"] == "2024-02-01T00:00:01+05:30"


def test_malformed():
    bad = ["", "garbage", '1.2.3.4 - - [bad date] "GET / HTTP/1.0" 200 1',
           '1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" abc 1']
    results = workspace.call_many(logstats.parse_line, [(b,) for b in bad])
    assert all(r is None for r in results), "parse_line must return None for a malformed line"


def test_cli_summary():
    lines = [LINE,
             '1.1.1.1 - - [10/Oct/2000:13:55:37 -0700] "GET /index.html HTTP/1.0" 200 10',
             '1.1.1.1 - - [10/Oct/2000:13:55:38 -0700] "GET /index.html?q=2 HTTP/1.0" 404 10',
             '1.1.1.1 - - [10/Oct/2000:13:55:39 -0700] "GET /b HTTP/1.0" 500 -',
             '1.1.1.1 - - [10/Oct/2000:13:55:39 -0700] "GET /c HTTP/1.0" 200 1',
             'not a log line', '']
    r = cli("\n".join(lines) + "\n")
    assert r.exit_code == 0, "python3 logstats.py should exit 0"
    out = json.loads(r.stdout)
    assert out["requests"] == 5
    assert out["malformed"] == 1
    assert out["status"] == {"200": 3, "404": 1, "500": 1}
    assert out["top_paths"] == [["/index.html", 2], ["/apache_pb.gif", 1], ["/b", 1]]


def test_cli_empty_input():
    out = json.loads(cli("").stdout)
    assert out == {"requests": 0, "malformed": 0, "status": {}, "top_paths": []}


def test_cli_ties_ordered_by_path_not_first_seen():
    req = '9.9.9.9 - - [10/Oct/2000:13:55:36 -0700] "GET {} HTTP/1.0" 200 5'
    paths = ["/zeta", "/yak", "/xray", "/wolf", "/m?a=1", "/m?b=2"]
    out = json.loads(cli("\n".join(req.format(p) for p in paths) + "\n").stdout)
    assert out["top_paths"] == [["/m", 2], ["/wolf", 1], ["/xray", 1]]


def test_cli_blank_and_malformed_lines_between_requests():
    lines = [LINE, "", "   ", "not a log line", LINE.replace("200 2326", "404 -"), "nor this", LINE]
    out = json.loads(cli("\n".join(lines) + "\n").stdout)
    assert out["requests"] == 3 and out["malformed"] == 2
    assert out["status"] == {"200": 2, "404": 1}
