def join_csv(left_path, right_path, out_path, on, how="inner"):
    raise NotImplementedError
