//! Kafka's error codes: every code with its name, description and whether a retry may succeed.

macro_rules! error_codes {
    ($($variant:ident = $code:literal, $retriable:literal, $name:literal, $doc:literal;)*) => {
        /// A non-zero error code from a response. Codes this table does not know are kept as `Unknown`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( #[doc = $doc] $variant, )*
            /// A code this client does not know (treated as not retriable).
            Unknown(i16),
        }

        impl ErrorCode {
            /// The error for a response's code, or `None` for 0 (no error).
            pub const fn from_code(code: i16) -> Option<ErrorCode> {
                match code {
                    0 => None,
                    $( $code => Some(ErrorCode::$variant), )*
                    other => Some(ErrorCode::Unknown(other)),
                }
            }

            /// The numeric code.
            pub const fn code(self) -> i16 {
                match self {
                    $( ErrorCode::$variant => $code, )*
                    ErrorCode::Unknown(c) => c,
                }
            }

            /// Kafka's name for the error, as in `Errors.java` (for example `NOT_LEADER_OR_FOLLOWER`).
            pub const fn name(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $name, )*
                    ErrorCode::Unknown(_) => "UNKNOWN",
                }
            }

            /// Whether the protocol marks the error as retriable (a retry may succeed).
            pub const fn is_retriable(self) -> bool {
                match self {
                    $( ErrorCode::$variant => $retriable, )*
                    ErrorCode::Unknown(_) => false,
                }
            }

            /// The protocol's description of the error.
            pub const fn description(self) -> &'static str {
                match self {
                    $( ErrorCode::$variant => $doc, )*
                    ErrorCode::Unknown(_) => "An error code this client does not recognise.",
                }
            }
        }
    };
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ErrorCode::Unknown(c) => write!(f, "unknown error code {c}"),
            e => write!(f, "{} ({}): {}", e.name(), e.code(), e.description()),
        }
    }
}

impl std::error::Error for ErrorCode {}

error_codes! {
    UnknownServerError = -1, false, "UNKNOWN_SERVER_ERROR", "The server experienced an unexpected error when processing the request.";
    OffsetOutOfRange = 1, false, "OFFSET_OUT_OF_RANGE", "The requested offset is not within the range of offsets maintained by the server.";
    CorruptMessage = 2, true, "CORRUPT_MESSAGE", "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.";
    UnknownTopicOrPartition = 3, true, "UNKNOWN_TOPIC_OR_PARTITION", "This server does not host this topic-partition.";
    InvalidFetchSize = 4, false, "INVALID_FETCH_SIZE", "The requested fetch size is invalid.";
    LeaderNotAvailable = 5, true, "LEADER_NOT_AVAILABLE", "There is no leader for this topic-partition as we are in the middle of a leadership election.";
    NotLeaderOrFollower = 6, true, "NOT_LEADER_OR_FOLLOWER", "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.";
    RequestTimedOut = 7, true, "REQUEST_TIMED_OUT", "The request timed out.";
    BrokerNotAvailable = 8, false, "BROKER_NOT_AVAILABLE", "The broker is not available.";
    ReplicaNotAvailable = 9, true, "REPLICA_NOT_AVAILABLE", "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.";
    MessageTooLarge = 10, false, "MESSAGE_TOO_LARGE", "The request included a message larger than the max message size the server will accept.";
    StaleControllerEpoch = 11, false, "STALE_CONTROLLER_EPOCH", "The controller moved to another broker.";
    OffsetMetadataTooLarge = 12, false, "OFFSET_METADATA_TOO_LARGE", "The metadata field of the offset request was too large.";
    NetworkException = 13, true, "NETWORK_EXCEPTION", "The server disconnected before a response was received.";
    CoordinatorLoadInProgress = 14, true, "COORDINATOR_LOAD_IN_PROGRESS", "The coordinator is loading and hence can't process requests.";
    CoordinatorNotAvailable = 15, true, "COORDINATOR_NOT_AVAILABLE", "The coordinator is not available.";
    NotCoordinator = 16, true, "NOT_COORDINATOR", "This is not the correct coordinator.";
    InvalidTopicException = 17, false, "INVALID_TOPIC_EXCEPTION", "The request attempted to perform an operation on an invalid topic.";
    RecordListTooLarge = 18, false, "RECORD_LIST_TOO_LARGE", "The request included message batch larger than the configured segment size on the server.";
    NotEnoughReplicas = 19, true, "NOT_ENOUGH_REPLICAS", "Messages are rejected since there are fewer in-sync replicas than required.";
    NotEnoughReplicasAfterAppend = 20, true, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "Messages are written to the log, but to fewer in-sync replicas than required.";
    InvalidRequiredAcks = 21, false, "INVALID_REQUIRED_ACKS", "Produce request specified an invalid value for required acks.";
    IllegalGeneration = 22, false, "ILLEGAL_GENERATION", "Specified group generation id is not valid.";
    InconsistentGroupProtocol = 23, false, "INCONSISTENT_GROUP_PROTOCOL", "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.";
    InvalidGroupId = 24, false, "INVALID_GROUP_ID", "The configured groupId is invalid.";
    UnknownMemberId = 25, false, "UNKNOWN_MEMBER_ID", "The coordinator is not aware of this member.";
    InvalidSessionTimeout = 26, false, "INVALID_SESSION_TIMEOUT", "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).";
    RebalanceInProgress = 27, false, "REBALANCE_IN_PROGRESS", "The group is rebalancing, so a rejoin is needed.";
    InvalidCommitOffsetSize = 28, false, "INVALID_COMMIT_OFFSET_SIZE", "The committing offset data size is not valid.";
    TopicAuthorizationFailed = 29, false, "TOPIC_AUTHORIZATION_FAILED", "Topic authorization failed.";
    GroupAuthorizationFailed = 30, false, "GROUP_AUTHORIZATION_FAILED", "Group authorization failed.";
    ClusterAuthorizationFailed = 31, false, "CLUSTER_AUTHORIZATION_FAILED", "Cluster authorization failed.";
    InvalidTimestamp = 32, false, "INVALID_TIMESTAMP", "The timestamp of the message is out of acceptable range.";
    UnsupportedSaslMechanism = 33, false, "UNSUPPORTED_SASL_MECHANISM", "The broker does not support the requested SASL mechanism.";
    IllegalSaslState = 34, false, "ILLEGAL_SASL_STATE", "Request is not valid given the current SASL state.";
    UnsupportedVersion = 35, false, "UNSUPPORTED_VERSION", "The version of API is not supported.";
    TopicAlreadyExists = 36, false, "TOPIC_ALREADY_EXISTS", "Topic with this name already exists.";
    InvalidPartitions = 37, false, "INVALID_PARTITIONS", "Number of partitions is below 1.";
    InvalidReplicationFactor = 38, false, "INVALID_REPLICATION_FACTOR", "Replication factor is below 1 or larger than the number of available brokers.";
    InvalidReplicaAssignment = 39, false, "INVALID_REPLICA_ASSIGNMENT", "Replica assignment is invalid.";
    InvalidConfig = 40, false, "INVALID_CONFIG", "Configuration is invalid.";
    NotController = 41, true, "NOT_CONTROLLER", "This is not the correct controller for this cluster.";
    InvalidRequest = 42, false, "INVALID_REQUEST", "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.";
    UnsupportedForMessageFormat = 43, false, "UNSUPPORTED_FOR_MESSAGE_FORMAT", "The message format version on the broker does not support the request.";
    PolicyViolation = 44, false, "POLICY_VIOLATION", "Request parameters do not satisfy the configured policy.";
    OutOfOrderSequenceNumber = 45, false, "OUT_OF_ORDER_SEQUENCE_NUMBER", "The broker received an out of order sequence number.";
    DuplicateSequenceNumber = 46, false, "DUPLICATE_SEQUENCE_NUMBER", "The broker received a duplicate sequence number.";
    InvalidProducerEpoch = 47, false, "INVALID_PRODUCER_EPOCH", "Producer attempted to produce with an old epoch.";
    InvalidTxnState = 48, false, "INVALID_TXN_STATE", "The producer attempted a transactional operation in an invalid state.";
    InvalidProducerIdMapping = 49, false, "INVALID_PRODUCER_ID_MAPPING", "The producer attempted to use a producer id which is not currently assigned to its transactional id.";
    InvalidTransactionTimeout = 50, false, "INVALID_TRANSACTION_TIMEOUT", "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).";
    ConcurrentTransactions = 51, true, "CONCURRENT_TRANSACTIONS", "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.";
    TransactionCoordinatorFenced = 52, false, "TRANSACTION_COORDINATOR_FENCED", "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.";
    TransactionalIdAuthorizationFailed = 53, false, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "Transactional Id authorization failed.";
    SecurityDisabled = 54, false, "SECURITY_DISABLED", "Security features are disabled.";
    OperationNotAttempted = 55, false, "OPERATION_NOT_ATTEMPTED", "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.";
    KafkaStorageError = 56, true, "KAFKA_STORAGE_ERROR", "Disk error when trying to access log file on the disk.";
    LogDirNotFound = 57, false, "LOG_DIR_NOT_FOUND", "The user-specified log directory is not found in the broker config.";
    SaslAuthenticationFailed = 58, false, "SASL_AUTHENTICATION_FAILED", "SASL Authentication failed.";
    UnknownProducerId = 59, false, "UNKNOWN_PRODUCER_ID", "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.";
    ReassignmentInProgress = 60, false, "REASSIGNMENT_IN_PROGRESS", "A partition reassignment is in progress.";
    DelegationTokenAuthDisabled = 61, false, "DELEGATION_TOKEN_AUTH_DISABLED", "Delegation Token feature is not enabled.";
    DelegationTokenNotFound = 62, false, "DELEGATION_TOKEN_NOT_FOUND", "Delegation Token is not found on server.";
    DelegationTokenOwnerMismatch = 63, false, "DELEGATION_TOKEN_OWNER_MISMATCH", "Specified Principal is not valid Owner/Renewer.";
    DelegationTokenRequestNotAllowed = 64, false, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.";
    DelegationTokenAuthorizationFailed = 65, false, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", "Delegation Token authorization failed.";
    DelegationTokenExpired = 66, false, "DELEGATION_TOKEN_EXPIRED", "Delegation Token is expired.";
    InvalidPrincipalType = 67, false, "INVALID_PRINCIPAL_TYPE", "Supplied principalType is not supported.";
    NonEmptyGroup = 68, false, "NON_EMPTY_GROUP", "The group is not empty.";
    GroupIdNotFound = 69, false, "GROUP_ID_NOT_FOUND", "The group id does not exist.";
    FetchSessionIdNotFound = 70, true, "FETCH_SESSION_ID_NOT_FOUND", "The fetch session ID was not found.";
    InvalidFetchSessionEpoch = 71, true, "INVALID_FETCH_SESSION_EPOCH", "The fetch session epoch is invalid.";
    ListenerNotFound = 72, true, "LISTENER_NOT_FOUND", "There is no listener on the leader broker that matches the listener on which metadata request was processed.";
    TopicDeletionDisabled = 73, false, "TOPIC_DELETION_DISABLED", "Topic deletion is disabled.";
    FencedLeaderEpoch = 74, true, "FENCED_LEADER_EPOCH", "The leader epoch in the request is older than the epoch on the broker.";
    UnknownLeaderEpoch = 75, true, "UNKNOWN_LEADER_EPOCH", "The leader epoch in the request is newer than the epoch on the broker.";
    UnsupportedCompressionType = 76, false, "UNSUPPORTED_COMPRESSION_TYPE", "The requesting client does not support the compression type of given partition.";
    StaleBrokerEpoch = 77, false, "STALE_BROKER_EPOCH", "Broker epoch has changed.";
    OffsetNotAvailable = 78, true, "OFFSET_NOT_AVAILABLE", "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.";
    MemberIdRequired = 79, false, "MEMBER_ID_REQUIRED", "The group member needs to have a valid member id before actually entering a consumer group.";
    PreferredLeaderNotAvailable = 80, true, "PREFERRED_LEADER_NOT_AVAILABLE", "The preferred leader was not available.";
    GroupMaxSizeReached = 81, false, "GROUP_MAX_SIZE_REACHED", "The consumer group has reached its max size.";
    FencedInstanceId = 82, false, "FENCED_INSTANCE_ID", "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.";
    EligibleLeadersNotAvailable = 83, true, "ELIGIBLE_LEADERS_NOT_AVAILABLE", "Eligible topic partition leaders are not available.";
    ElectionNotNeeded = 84, true, "ELECTION_NOT_NEEDED", "Leader election not needed for topic partition.";
    NoReassignmentInProgress = 85, false, "NO_REASSIGNMENT_IN_PROGRESS", "No partition reassignment is in progress.";
    GroupSubscribedToTopic = 86, false, "GROUP_SUBSCRIBED_TO_TOPIC", "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.";
    InvalidRecord = 87, false, "INVALID_RECORD", "This record has failed the validation on broker and hence will be rejected.";
    UnstableOffsetCommit = 88, true, "UNSTABLE_OFFSET_COMMIT", "There are unstable offsets that need to be cleared.";
    ThrottlingQuotaExceeded = 89, true, "THROTTLING_QUOTA_EXCEEDED", "The throttling quota has been exceeded.";
    ProducerFenced = 90, false, "PRODUCER_FENCED", "There is a newer producer with the same transactionalId which fences the current one.";
    ResourceNotFound = 91, false, "RESOURCE_NOT_FOUND", "A request illegally referred to a resource that does not exist.";
    DuplicateResource = 92, false, "DUPLICATE_RESOURCE", "A request illegally referred to the same resource twice.";
    UnacceptableCredential = 93, false, "UNACCEPTABLE_CREDENTIAL", "Requested credential would not meet criteria for acceptability.";
    InconsistentVoterSet = 94, false, "INCONSISTENT_VOTER_SET", "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters";
    InvalidUpdateVersion = 95, false, "INVALID_UPDATE_VERSION", "The given update version was invalid.";
    FeatureUpdateFailed = 96, false, "FEATURE_UPDATE_FAILED", "Unable to update finalized features due to an unexpected server error.";
    PrincipalDeserializationFailure = 97, false, "PRINCIPAL_DESERIALIZATION_FAILURE", "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.";
    SnapshotNotFound = 98, false, "SNAPSHOT_NOT_FOUND", "Requested snapshot was not found";
    PositionOutOfRange = 99, false, "POSITION_OUT_OF_RANGE", "Requested position is not greater than or equal to zero, and less than the size of the snapshot.";
    UnknownTopicId = 100, true, "UNKNOWN_TOPIC_ID", "This server does not host this topic ID.";
    DuplicateBrokerRegistration = 101, false, "DUPLICATE_BROKER_REGISTRATION", "This broker ID is already in use.";
    BrokerIdNotRegistered = 102, false, "BROKER_ID_NOT_REGISTERED", "The given broker ID was not registered.";
    InconsistentTopicId = 103, true, "INCONSISTENT_TOPIC_ID", "The log's topic ID did not match the topic ID in the request";
    InconsistentClusterId = 104, false, "INCONSISTENT_CLUSTER_ID", "The clusterId in the request does not match that found on the server";
    TransactionalIdNotFound = 105, false, "TRANSACTIONAL_ID_NOT_FOUND", "The transactionalId could not be found";
    FetchSessionTopicIdError = 106, true, "FETCH_SESSION_TOPIC_ID_ERROR", "The fetch session encountered inconsistent topic ID usage";
    IneligibleReplica = 107, false, "INELIGIBLE_REPLICA", "The new ISR contains at least one ineligible replica.";
    NewLeaderElected = 108, false, "NEW_LEADER_ELECTED", "The AlterPartition request successfully updated the partition state but the leader has changed.";
    OffsetMovedToTieredStorage = 109, false, "OFFSET_MOVED_TO_TIERED_STORAGE", "The requested offset is moved to tiered storage.";
    FencedMemberEpoch = 110, false, "FENCED_MEMBER_EPOCH", "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.";
    UnreleasedInstanceId = 111, false, "UNRELEASED_INSTANCE_ID", "The instance ID is still used by another member in the consumer group. That member must leave first.";
    UnsupportedAssignor = 112, false, "UNSUPPORTED_ASSIGNOR", "The assignor or its version range is not supported by the consumer group.";
    StaleMemberEpoch = 113, false, "STALE_MEMBER_EPOCH", "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.";
    MismatchedEndpointType = 114, false, "MISMATCHED_ENDPOINT_TYPE", "The request was sent to an endpoint of the wrong type.";
    UnsupportedEndpointType = 115, false, "UNSUPPORTED_ENDPOINT_TYPE", "This endpoint type is not supported yet.";
    UnknownControllerId = 116, false, "UNKNOWN_CONTROLLER_ID", "This controller ID is not known.";
    UnknownSubscriptionId = 117, false, "UNKNOWN_SUBSCRIPTION_ID", "Client sent a push telemetry request with an invalid or outdated subscription ID.";
    TelemetryTooLarge = 118, false, "TELEMETRY_TOO_LARGE", "Client sent a push telemetry request larger than the maximum size the broker will accept.";
    InvalidRegistration = 119, false, "INVALID_REGISTRATION", "The controller has considered the broker registration to be invalid.";
    TransactionAbortable = 120, false, "TRANSACTION_ABORTABLE", "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.";
    InvalidRecordState = 121, false, "INVALID_RECORD_STATE", "The record state is invalid. The acknowledgement of delivery could not be completed.";
    ShareSessionNotFound = 122, true, "SHARE_SESSION_NOT_FOUND", "The share session was not found.";
    InvalidShareSessionEpoch = 123, true, "INVALID_SHARE_SESSION_EPOCH", "The share session epoch is invalid.";
    FencedStateEpoch = 124, false, "FENCED_STATE_EPOCH", "The share coordinator rejected the request because the share-group state epoch did not match.";
    InvalidVoterKey = 125, false, "INVALID_VOTER_KEY", "The voter key doesn't match the receiving replica's key.";
    DuplicateVoter = 126, false, "DUPLICATE_VOTER", "The voter is already part of the set of voters.";
    VoterNotFound = 127, false, "VOTER_NOT_FOUND", "The voter is not part of the set of voters.";
    InvalidRegularExpression = 128, false, "INVALID_REGULAR_EXPRESSION", "The regular expression is not valid.";
    RebootstrapRequired = 129, false, "REBOOTSTRAP_REQUIRED", "Client metadata is stale, client should rebootstrap to obtain new metadata.";
    StreamsInvalidTopology = 130, false, "STREAMS_INVALID_TOPOLOGY", "The supplied topology is invalid.";
    StreamsInvalidTopologyEpoch = 131, false, "STREAMS_INVALID_TOPOLOGY_EPOCH", "The supplied topology epoch is invalid.";
    StreamsTopologyFenced = 132, false, "STREAMS_TOPOLOGY_FENCED", "The supplied topology epoch is outdated.";
    ShareSessionLimitReached = 133, true, "SHARE_SESSION_LIMIT_REACHED", "The limit of share sessions has been reached.";
    GroupDeletionFailed = 134, false, "GROUP_DELETION_FAILED", "DeleteGroups could not complete; see the error message on the per-group result for details.";
    StreamsTopologyDescriptionUpdateFailed = 135, false, "STREAMS_TOPOLOGY_DESCRIPTION_UPDATE_FAILED", "The broker could not process the topology description update; see the error message for details.";
    ControllerIdNotRegistered = 136, false, "CONTROLLER_ID_NOT_REGISTERED", "The given controller ID was not registered.";
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn codes_round_trip_and_unknowns_are_kept() {
        assert_eq!(ErrorCode::from_code(0), None);
        let e = ErrorCode::from_code(6).unwrap();
        assert_eq!(e, ErrorCode::NotLeaderOrFollower);
        assert_eq!(e.name(), "NOT_LEADER_OR_FOLLOWER");
        assert!(e.is_retriable());
        assert_eq!(e.code(), 6);
        assert!(!ErrorCode::from_code(10).unwrap().is_retriable());
        assert_eq!(ErrorCode::from_code(9999), Some(ErrorCode::Unknown(9999)));
        for code in -1..200 {
            if let Some(e) = ErrorCode::from_code(code) {
                assert_eq!(e.code(), code);
            }
        }
    }
}
