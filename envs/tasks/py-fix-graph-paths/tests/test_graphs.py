from sandgym_harness import workspace

algo = workspace.module("graphs.algo")
graph = workspace.module("graphs.graph")


def g(*edges):
    gr = graph.Graph()
    workspace.call_many(gr.add_edge, edges)
    return gr


def test_path_order():
    assert algo.shortest_path(g(("a", "b"), ("b", "c")), "a", "c") == ["a", "b", "c"]


def test_path_fewest_edges():
    gr = g(("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"))
    assert algo.shortest_path(gr, "a", "d") == ["a", "d"]


def test_path_tie_sorted():
    gr = g(("s", "y"), ("s", "x"), ("x", "t"), ("y", "t"))
    assert algo.shortest_path(gr, "s", "t") == ["s", "x", "t"]


def test_path_start_is_goal():
    assert algo.shortest_path(g(("a", "b")), "a", "a") == ["a"]


def test_path_back_to_start_cycle():
    gr = g(("a", "b"), ("b", "a"), ("b", "c"))
    assert algo.shortest_path(gr, "a", "c") == ["a", "b", "c"]


def test_unreachable():
    assert algo.shortest_path(g(("a", "b"), ("c", "d")), "a", "d") is None


def test_diamond_no_cycle():
    assert algo.has_cycle(g(("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"))) is False


def test_cycle():
    assert algo.has_cycle(g(("a", "b"), ("b", "c"), ("c", "a"))) is True


def test_self_loop():
    assert algo.has_cycle(g(("a", "a"))) is True


def test_empty_graph():
    assert algo.has_cycle(graph.Graph()) is False


def test_path_named_nodes():
    # Multi-character names: nodes are compared by value, whatever objects carry them.
    gr = g(("home", "station"), ("station", "office"), ("home", "park"), ("park", "lake"), ("lake", "office"))
    assert algo.shortest_path(gr, "home", "office") == ["home", "station", "office"]
    assert algo.shortest_path(gr, "office", "home") is None


def test_path_fewest_edges_not_first_found():
    # A search that expands the most recently discovered node first finds a-y-x-w-e.
    gr = g(("a", "b"), ("b", "e"), ("a", "y"), ("y", "x"), ("x", "w"), ("w", "e"))
    assert algo.shortest_path(gr, "a", "e") == ["a", "b", "e"]


def test_cycle_not_through_first_node():
    assert algo.has_cycle(g(("a", "b"), ("b", "c"), ("c", "d"), ("d", "b"))) is True
    assert algo.has_cycle(g(("a", "b"), ("c", "d"), ("d", "c"))) is True
    assert algo.has_cycle(g(("a", "b"), ("c", "d"), ("b", "d"))) is False


def test_long_dag_of_diamonds_is_fast():
    # 40 diamonds in a row: 2**40 paths, 121 nodes. A search that re-explores finished nodes never ends. The edges
    # are added from the sink back, so the nodes nearest the sink are met first (and finished) when scanning adj.
    edges = []
    for i in reversed(range(40)):
        edges += [(f"l{i}", f"n{i + 1}"), (f"r{i}", f"n{i + 1}"), (f"n{i}", f"l{i}"), (f"n{i}", f"r{i}")]
    gr = g(*edges)
    # One call each, under the harness's per-call deadline (a linear search needs about a millisecond).
    assert algo.has_cycle(gr) is False
    assert len(algo.shortest_path(gr, "n0", "n40")) == 81
    gr.add_edge("n40", "n0")
    assert algo.has_cycle(gr) is True
