"""OpenEnv's side of the peer benchmark: a counter env written the way ``openenv init`` templates an env
(models.py with an Action and an Observation, server/<name>_environment.py with a synchronous
Environment, server/app.py calling ``create_app``), served by one uvicorn worker as its Dockerfile does.
It does the same per-step work as sandgym's ``test/counter-v0`` (add the action to a counter)."""
