"""The game server: tables, wallet, persistence, history, reconnection and voiding (FastAPI + SQLAlchemy)."""
