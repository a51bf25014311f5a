raise SystemExit("a workspace json.py was imported")
