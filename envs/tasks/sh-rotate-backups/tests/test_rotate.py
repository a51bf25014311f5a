from sandgym_harness import workspace

NAMES = ["backup-2024-01-05.tar.gz", "backup-2023-12-31.tar.gz", "backup-2024-02-01.tar.gz", "backup-2024-01-20.tar.gz"]


def sh(*args):
    return workspace.run(["bash", "rotate.sh", *map(str, args)], timeout=30)


def make_backups():
    d = workspace.tmpdir()
    for i, n in enumerate(NAMES):
        p = d + "/" + n
        workspace.write_file(p, n)
        workspace.utime(p, (1000 - i, 1000 - i))  # file times deliberately disagree with the names
    workspace.write_file(d + "/notes.txt", "keep")
    workspace.write_file(d + "/backup-latest.tar.gz", "keep")
    return d


def remaining(d):
    return workspace.listdir(d)


def test_keep_two():
    d = make_backups()
    r = sh(d, 2)
    assert r.exit_code == 0, "bash rotate.sh DIR 2 should exit 0"
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz", "backup-2024-01-05.tar.gz"]
    assert remaining(d) == ["backup-2024-01-20.tar.gz", "backup-2024-02-01.tar.gz", "backup-latest.tar.gz", "notes.txt"]


def test_keep_zero():
    d = make_backups()
    r = sh(d, 0)
    assert r.exit_code == 0
    assert remaining(d) == ["backup-latest.tar.gz", "notes.txt"]
    assert len(r.stdout.splitlines()) == 4


def test_keep_more_than_present():
    d = make_backups()
    r = sh(d, 10)
    assert r.exit_code == 0 and r.stdout.strip() == ""
    assert len(remaining(d)) == 6


def test_subdirectories_untouched():
    d = make_backups()
    workspace.mkdir(d + "/old")
    workspace.write_file(d + "/old/backup-2000-01-01.tar.gz", "x")
    sh(d, 1)
    assert workspace.exists(d + "/old/backup-2000-01-01.tar.gz")


def test_bad_arguments():
    d = make_backups()
    for args in [(d, "-1"), (d, "two"), (d + "/nope", "1"), (d,)]:
        assert sh(*args).exit_code == 2
    assert len(remaining(d)) == 6
