from sandgym_harness import workspace


def sh(*args):
    return workspace.run(["bash", "rename_ext.sh", *map(str, args)], timeout=30)


def tree(root):
    # workspace.tree marks directories with a trailing "/"; compare bare relative paths
    return sorted(p.rstrip("/") for p in workspace.tree(root))


def test_renames_recursively():
    d = workspace.tmpdir()
    workspace.mkdir(d + "/sub dir")
    for name in ["a.jpeg", "b.JPEG", "sub dir/c d.jpeg", "e.jpeg.bak", "f.png"]:
        workspace.write_file(d + "/" + name, name)
    r = sh(d, "jpeg", "jpg")
    assert r.exit_code == 0, "bash rename_ext.sh DIR jpeg jpg should exit 0"
    assert tree(d) == ["a.jpg", "b.JPEG", "e.jpeg.bak", "f.png", "sub dir", "sub dir/c d.jpg"]
    assert workspace.read_text(d + "/sub dir/c d.jpg") == "sub dir/c d.jpeg"
    assert r.stdout.strip().splitlines()[-1] == "2"


def test_directories_not_renamed():
    d = workspace.tmpdir()
    workspace.mkdir(d + "/x.jpeg")
    r = sh(d, "jpeg", "jpg")
    assert r.exit_code == 0
    assert workspace.isdir(d + "/x.jpeg")
    assert r.stdout.strip().splitlines()[-1] == "0"


def test_conflict():
    d = workspace.tmpdir()
    workspace.write_file(d + "/a.jpeg", "new")
    workspace.write_file(d + "/a.jpg", "old")
    workspace.write_file(d + "/b.jpeg", "b")
    r = sh(d, "jpeg", "jpg")
    assert r.exit_code == 1
    assert r.stderr.strip()
    assert workspace.read_text(d + "/a.jpg") == "old" and workspace.exists(d + "/a.jpeg")
    assert workspace.exists(d + "/b.jpg")
    assert r.stdout.strip().splitlines()[-1] == "1"


def test_usage():
    d = workspace.tmpdir()
    for args in [(d, "a"), (d, "a", "b", "c"), (), (d + "/missing", "a", "b")]:
        r = sh(*args)
        assert r.exit_code == 2 and r.stderr.strip(), "wrong usage must print a usage message to stderr and exit 2"


def test_only_the_final_extension_of_the_file_name():
    d = workspace.tmpdir()
    workspace.mkdir(d + "/x.jpeg")
    for name in ["x.jpeg/y.jpeg", "x.jpeg/z.jpeg.jpeg", "jpeg", "ajpeg", "w.jpegx"]:
        workspace.write_file(d + "/" + name, name)
    r = sh(d, "jpeg", "jpg")
    assert r.exit_code == 0
    assert tree(d) == ["ajpeg", "jpeg", "w.jpegx", "x.jpeg", "x.jpeg/y.jpg", "x.jpeg/z.jpeg.jpg"]
    assert workspace.read_text(d + "/x.jpeg/z.jpeg.jpg") == "x.jpeg/z.jpeg.jpeg"
    assert r.stdout.strip().splitlines()[-1] == "2"
