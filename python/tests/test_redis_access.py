"""The package against a Redis Cluster that asks for a password.

tests/redis_access_test.cc starts such a cluster and runs this file with
FPSTORE_SECURED_REDIS (the seed, HOST:PORT) and FPSTORE_SECURED_REDIS_PASSWORD
set; without them, as in the plain pytest run, it is skipped."""

import os
from urllib.parse import quote

import pytest

import fpstore

SEED = os.environ.get("FPSTORE_SECURED_REDIS")
PASSWORD = os.environ.get("FPSTORE_SECURED_REDIS_PASSWORD", "")

pytestmark = pytest.mark.skipif(SEED is None, reason="needs FPSTORE_SECURED_REDIS")


def test_signs_in_with_the_password_of_the_url_or_the_keywords():
    url = f"redis://{SEED}/python-access"
    with fpstore.open(url, redis_password=PASSWORD) as store:
        store.insert(1, 0x1234, "one")
        assert [m.id for m in store.query(0x1235, distance=1)] == [1]
    in_url = f"redis://default:{quote(PASSWORD, safe='')}@{SEED}/python-access"
    with fpstore.open(in_url, read_only=True) as store:
        assert store.get(1).metadata == b"one"
        assert PASSWORD not in store.path
        assert ":***@" in store.path
    fpstore.destroy_store(url, redis_password=PASSWORD)


def test_a_wrong_password_is_named_and_not_shown():
    with pytest.raises(fpstore.InvalidArgumentError) as refused:
        fpstore.open(f"redis://{SEED}/python-access", redis_password="Wr0ng-Pw-xyz")
    assert "wrong password" in str(refused.value)
    assert "Wr0ng-Pw-xyz" not in str(refused.value)
    assert PASSWORD not in str(refused.value)
