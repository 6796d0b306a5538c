"""A producer profile: the client settings one producer process runs with, checked by librdkafka itself."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from kafka_chaos.base.errors import UsageError
from kafka_chaos.history.schema import ACKS_CHOICES, acks_level

CLIENTS = ("librdkafka", "java")             # librdkafka through confluent-kafka; Kafka's own Java client
CLIENT_DEFAULT_RETRIES = 2_147_483_647      # librdkafka's default `retries` (message.send.max.retries)


@dataclass(frozen=True)
class ProducerProfile:
    """One producer's settings. None leaves a setting at the client's default.

    `rate` is sends per second for this producer; None sends as fast as the client accepts them.
    """

    name: str = "p0"
    acks: str = "all"
    idempotent: bool = True
    max_in_flight: int = 5
    retries: int | None = None
    delivery_timeout_ms: int = 30_000
    request_timeout_ms: int = 10_000
    linger_ms: int = 5
    rate: float | None = None
    client: str = "librdkafka"
    transactional: bool = False          # --transactions: transactions of txn_size sends, every abort_every-th aborted
    txn_size: int = 30
    abort_every: int = 4

    def __post_init__(self):
        """acks normalised and checked once, here: a profile holds a level of history.schema.ACKS_LEVELS."""
        try:
            object.__setattr__(self, "acks", acks_level(self.acks))
        except ValueError:
            raise UsageError(f"producer {self.name}: acks={str(self.acks)!r} is not one of {', '.join(ACKS_CHOICES)}",
                             "use acks 0, 1 or all") from None

    @property
    def single_attempt(self) -> bool:
        """The client never retries a send, so a pre-append rejection is definite."""
        return self.retries == 0 and not self.idempotent

    def client_config(self) -> dict:
        """librdkafka settings of this profile (no bootstrap servers, no callbacks)."""
        conf = {
            "acks": self.acks,
            "enable.idempotence": self.idempotent,
            "max.in.flight.requests.per.connection": self.max_in_flight,
            "delivery.timeout.ms": self.delivery_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "linger.ms": self.linger_ms,
        }
        if self.retries is not None:
            conf["retries"] = self.retries
        return conf

    def validate(self) -> "ProducerProfile":
        """Raise UsageError for a profile we cannot run or that librdkafka rejects; return self."""
        if self.rate is not None and self.rate <= 0:
            raise UsageError(f"producer {self.name}: rate {self.rate} must be positive",
                             "give a positive rate, or none for as fast as possible")
        if self.client not in CLIENTS:
            raise UsageError(f"producer {self.name}: client {self.client!r} is not one of {', '.join(CLIENTS)}",
                             "use --client librdkafka, java or both")
        if self.transactional and (self.acks != "all" or not self.idempotent or self.abort_every < 1):
            raise UsageError(f"producer {self.name}: a transactional producer needs acks=all and idempotence",
                             "use --acks all --idempotence with --transactions")
        if self.client == "java":
            return self._validate_java()
        from confluent_kafka import KafkaException, Producer

        try:
            Producer(self.client_config() | {"log_level": 0})
        except KafkaException as e:
            raise UsageError(f"producer {self.name}: the Kafka client rejects this profile: {e.args[0].str()}",
                             "change the profile (e.g. idempotence needs acks=all, retries >= 1 and "
                             "max.in.flight <= 5)") from None
        return self

    def _validate_java(self) -> "ProducerProfile":
        """The Java producer's own idempotence rules (ProducerConfig: acks=all, retries > 0, at most 5 in flight),
        checked here so that a bad profile fails before any JVM starts."""
        if self.idempotent and (self.acks != "all" or self.retries == 0 or self.max_in_flight > 5):
            raise UsageError(f"producer {self.name}: the Java client refuses idempotence with acks={self.acks}, "
                             f"retries={self.retries}, max.in.flight={self.max_in_flight}",
                             "idempotence needs acks=all, retries >= 1 and max.in.flight <= 5 (or --no-idempotence)")
        return self

    def to_meta(self) -> dict:
        """The profile as meta.json's `producers` entries spell it: effective values (retries left at the
        client's default is librdkafka's default, INT32_MAX); rate null means as fast as possible."""
        meta = asdict(self)
        if not self.transactional:
            for key in ("transactional", "txn_size", "abort_every"):
                del meta[key]
        if meta["retries"] is None:
            meta["retries"] = CLIENT_DEFAULT_RETRIES
        return meta

    def named(self, name: str) -> "ProducerProfile":
        return replace(self, name=name)
