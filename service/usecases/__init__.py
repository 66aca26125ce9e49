"""Use cases: one module per capability. Each takes plain arguments and a session, owns its
database transaction (commits once on success, rolls back on any error) and returns values.
"""
