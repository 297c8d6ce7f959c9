//! ConsumerGroupDescribe response (API key 69): describe consumer groups of the KIP-848 protocol.
//!
//! Versions 0-1, as in Kafka 4.1. Field lines are in wire order; [`crate::schema`] gives the syntax.

use uuid::Uuid;

kafka_struct! {
    pub struct TopicPartitions {

        /// The topic ID.
        topic_id: Uuid [v ..],

        /// The topic name.
        topic_name: String [v ..],

        /// The partitions.
        partitions: Vec<i32> [v ..],

    }
}

kafka_struct! {
    pub struct Assignment {

        /// The assigned topic-partitions to the member.
        topic_partitions: Vec<TopicPartitions> [v ..],

    }
}

kafka_struct! {
    pub struct Member {

        /// The member ID.
        member_id: String [v ..],

        /// The member instance ID.
        instance_id: Option<String> [v .., default None],

        /// The member rack ID.
        rack_id: Option<String> [v .., default None],

        /// The current member epoch.
        member_epoch: i32 [v ..],

        /// The client ID.
        client_id: String [v ..],

        /// The client host.
        client_host: String [v ..],

        /// The subscribed topic names.
        subscribed_topic_names: Vec<String> [v ..],

        /// The subscribed topic regex otherwise or null of not provided.
        subscribed_topic_regex: Option<String> [v .., default None],

        /// The current assignment.
        assignment: Assignment [v ..],

        /// The target assignment.
        target_assignment: Assignment [v ..],

        /// -1 for unknown. 0 for classic member. +1 for consumer member.
        member_type: i8 [v 1.., default -1],

    }
}

kafka_struct! {
    pub struct DescribedGroup {

        /// The describe error, or 0 if there was no error.
        error_code: i16 [v ..],

        /// The top-level error message, or null if there was no error.
        error_message: Option<String> [v .., default None],

        /// The group ID string.
        group_id: String [v ..],

        /// The group state string, or the empty string.
        group_state: String [v ..],

        /// The group epoch.
        group_epoch: i32 [v ..],

        /// The assignment epoch.
        assignment_epoch: i32 [v ..],

        /// The selected assignor.
        assignor_name: String [v ..],

        /// The members.
        members: Vec<Member> [v ..],

        /// 32-bit bitfield to represent authorized operations for this group.
        authorized_operations: i32 [v .., default -2147483648],

    }
}

kafka_struct! {
    pub struct ConsumerGroupDescribeResponse {

        /// The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the request did not violate any quota.
        throttle_time_ms: i32 [v ..],

        /// Each described group.
        groups: Vec<DescribedGroup> [v ..],

    }
}
