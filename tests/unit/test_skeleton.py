from service import create_app


def test_healthz_answers_ok() -> None:
    client = create_app({"TESTING": True}).test_client()
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}
