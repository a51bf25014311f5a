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


def test_keep_three_and_four():
    d = make_backups()
    r = sh(d, 4)
    assert r.exit_code == 0 and r.stdout == ""
    assert len(remaining(d)) == 6
    r = sh(d, 3)
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz"]
    assert remaining(d) == ["backup-2024-01-05.tar.gz", "backup-2024-01-20.tar.gz", "backup-2024-02-01.tar.gz",
                            "backup-latest.tar.gz", "notes.txt"]


def test_keep_one_prints_oldest_first():
    d = make_backups()
    r = sh(d, 1)
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz", "backup-2024-01-05.tar.gz", "backup-2024-01-20.tar.gz"]
    assert remaining(d) == ["backup-2024-02-01.tar.gz", "backup-latest.tar.gz", "notes.txt"]


def test_only_exact_backup_names_count():
    d = workspace.tmpdir()
    backups = ["backup-2020-06-01.tar.gz", "backup-2021-06-01.tar.gz"]
    others = ["backup-2019-01-01.tar.gz.bak", "backup-2019-1-1.tar.gz", "old-backup-2018-01-01.tar.gz",
              "backup-2017-01-01.tgz", "backup-2016-01-01.tar", "Backup-2015-01-01.tar.gz"]
    for n in backups + others:
        workspace.write_file(d + "/" + n, n)
    workspace.mkdir(d + "/backup-2000-01-01.tar.gz")  # a directory, not a backup
    r = sh(d, 1)
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["backup-2020-06-01.tar.gz"]
    assert remaining(d) == sorted(["backup-2000-01-01.tar.gz", "backup-2021-06-01.tar.gz"] + others)


def test_dir_with_spaces_and_trailing_slash():
    base = workspace.tmpdir()
    d = base + "/my backups"
    workspace.mkdir(d)
    for n in NAMES:
        workspace.write_file(d + "/" + n, n)
    r = sh(d + "/", 3)
    assert r.exit_code == 0
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz"]
    assert remaining(d) == sorted(NAMES[:1] + NAMES[2:])


def test_empty_dir():
    d = workspace.tmpdir()
    for n in (0, 2):
        r = sh(d, n)
        assert r.exit_code == 0 and r.stdout == ""


def test_bad_arguments_more():
    d = make_backups()
    workspace.write_file(d + "/file", "x")
    for args in [(d + "/file", "1"), (d + "/backup-2024-01-05.tar.gz", "0"), (d, ""), (d, "+1"), (d, "1.5"),
                 (d, " 1"), (d, "1x"), (d, "0", "extra"), ()]:
        r = sh(*args)
        assert r.exit_code == 2, f"arguments {len(args)} should exit 2"
        assert r.stdout == ""
        assert r.stderr.strip() != "", "bad arguments should print a usage message on stderr"
    assert len(remaining(d)) == 7


def test_backups_in_subdirectories_not_counted():
    d = make_backups()
    workspace.mkdir(d + "/new")
    workspace.write_file(d + "/new/backup-2030-01-01.tar.gz", "x")
    r = sh(d, 4)
    assert r.exit_code == 0 and r.stdout == ""
    assert len(remaining(d)) == 7
    r = sh(d, 3)
    assert r.stdout.splitlines() == ["backup-2023-12-31.tar.gz"]
    assert workspace.exists(d + "/new/backup-2030-01-01.tar.gz")
