//! The declarative message form: `kafka_struct!` turns one line per field into a struct,
//! its schema defaults, and its version-aware wire encoding.
//!
//! Each field is written as
//!
//! ```text
//! name: Type [v VERSIONS, tag N, null VERSIONS, default EXPR],
//! ```
//!
//! - `v` is a range of message versions in which the field exists (`..`, `4..`, `1..=12`).
//! - `tag N` makes it a tagged field (KIP-482): written only in flexible versions and only when
//!   it differs from its default.
//! - `null` narrows where an `Option` field may be null; without it, null is allowed wherever
//!   the field exists.
//! - `default` overrides the schema default. Without it numbers are 0, booleans false, strings
//!   and arrays empty, and nullable fields hold an empty (not null) value, as in Kafka's schemas.
//!
//! Field order is wire order. Unknown tagged fields are kept in `unknown_tagged_fields`.

use bytes::Bytes;
use uuid::Uuid;

/// The default a field takes when a version does not carry it and no `default` is given.
///
/// It differs from [`Default`] in one place: a nullable field defaults to an empty value,
/// not to null, as the Kafka schemas specify.
pub(crate) trait SchemaDefault {
    fn schema_default() -> Self;
}

macro_rules! plain_default {
    ($($t:ty),*) => {$(
        impl SchemaDefault for $t {
            fn schema_default() -> Self {
                Default::default()
            }
        }
    )*};
}
plain_default!(i8, i16, i32, i64, u16, u32, f64, bool, String, Bytes, Uuid);

impl<T> SchemaDefault for Vec<T> {
    fn schema_default() -> Self {
        Vec::new()
    }
}

impl<T: SchemaDefault> SchemaDefault for Option<T> {
    fn schema_default() -> Self {
        Some(T::schema_default())
    }
}

/// Wraps a decode error with the `Struct.field` it happened in.
pub(crate) fn in_field(path: &'static str, e: crate::DecodeError) -> crate::DecodeError {
    crate::DecodeError::InField {
        path,
        source: Box::new(e),
    }
}

macro_rules! __kafka_default {
    ($ty:ty;) => {
        <$ty as $crate::schema::SchemaDefault>::schema_default()
    };
    ($ty:ty; $d:expr) => {
        $d
    };
}

macro_rules! __kafka_tag {
    () => {
        None::<u32>
    };
    ($t:literal) => {
        Some::<u32>($t)
    };
}

macro_rules! __kafka_nullable {
    ($v:expr;) => {
        true
    };
    ($v:expr; $n:expr) => {
        ::std::ops::RangeBounds::contains(&($n), &$v)
    };
}

/// Declares a Kafka message structure; see the module docs for the field syntax.
macro_rules! kafka_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty [v $vers:expr $(, tag $tag:literal)? $(, null $null:expr)? $(, default $default:expr)?]
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            /// Tagged fields this codec does not know, kept verbatim.
            pub unknown_tagged_fields: $crate::wire::UnknownTaggedFields,
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    $( $field: __kafka_default!($ty; $($default)?), )*
                    unknown_tagged_fields: Default::default(),
                }
            }
        }

        impl $crate::schema::SchemaDefault for $name {
            fn schema_default() -> Self {
                Default::default()
            }
        }

        #[allow(unused_variables, unused_mut, unused_imports, clippy::manual_range_contains)]
        impl $crate::wire::Wire for $name {
            fn write(
                &self,
                buf: &mut $crate::wire::Encoder,
                ctx: $crate::wire::Ctx,
            ) -> Result<(), $crate::EncodeError> {
                use ::std::ops::RangeBounds;
                use $crate::wire::Wire;
                $(
                    if __kafka_tag!($($tag)?).is_none() && ($vers).contains(&ctx.version) {
                        if self.$field.is_null() && !__kafka_nullable!(ctx.version; $($null)?) {
                            return Err($crate::EncodeError::UnexpectedNull(
                                concat!(stringify!($name), ".", stringify!($field)),
                            ));
                        }
                        self.$field.write(buf, ctx)?;
                    }
                )*
                if ctx.flexible {
                    let mut tagged = Vec::new();
                    $(
                        if let Some(tag) = __kafka_tag!($($tag)?) {
                            if ($vers).contains(&ctx.version)
                                && self.$field != __kafka_default!($ty; $($default)?)
                            {
                                let mut value = $crate::wire::Encoder::default();
                                self.$field.write(&mut value, ctx)?;
                                tagged.push((tag, value.into_inner()));
                            }
                        }
                    )*
                    $crate::wire::write_tagged_fields(buf, tagged, &self.unknown_tagged_fields);
                }
                Ok(())
            }

            fn read(
                r: &mut $crate::wire::Reader<'_>,
                ctx: $crate::wire::Ctx,
            ) -> Result<Self, $crate::DecodeError> {
                use ::std::ops::RangeBounds;
                use $crate::wire::Wire;
                let mut this = Self::default();
                $(
                    if __kafka_tag!($($tag)?).is_none() && ($vers).contains(&ctx.version) {
                        const PATH: &str = concat!(stringify!($name), ".", stringify!($field));
                        this.$field = Wire::read(r, ctx)
                            .map_err(|e| $crate::schema::in_field(PATH, e))?;
                        if this.$field.is_null() && !__kafka_nullable!(ctx.version; $($null)?) {
                            return Err($crate::schema::in_field(PATH, $crate::DecodeError::UnexpectedNull));
                        }
                    }
                )*
                if ctx.flexible {
                    let $name { unknown_tagged_fields, $($field,)* } = &mut this;
                    $crate::wire::read_tagged_fields(r, unknown_tagged_fields, |tag, sub| {
                        $(
                            if __kafka_tag!($($tag)?) == Some(tag) && ($vers).contains(&ctx.version) {
                                const PATH: &str = concat!(stringify!($name), ".", stringify!($field));
                                *$field = Wire::read(sub, ctx)
                                    .map_err(|e| $crate::schema::in_field(PATH, e))?;
                                return Ok(true);
                            }
                        )*
                        Ok(false)
                    })?;
                }
                Ok(this)
            }
        }

        // A nullable struct is prefixed by an i8: -1 for null, 1 for present.
        impl $crate::wire::Wire for Option<$name> {
            fn write(
                &self,
                buf: &mut $crate::wire::Encoder,
                ctx: $crate::wire::Ctx,
            ) -> Result<(), $crate::EncodeError> {
                use ::bytes::BufMut;
                match self {
                    None => {
                        buf.put_i8(-1);
                        Ok(())
                    }
                    Some(v) => {
                        buf.put_i8(1);
                        $crate::wire::Wire::write(v, buf, ctx)
                    }
                }
            }
            fn read(
                r: &mut $crate::wire::Reader<'_>,
                ctx: $crate::wire::Ctx,
            ) -> Result<Self, $crate::DecodeError> {
                match r.i8()? {
                    -1 => Ok(None),
                    _ => Ok(Some($crate::wire::Wire::read(r, ctx)?)),
                }
            }
            fn is_null(&self) -> bool {
                self.is_none()
            }
        }

        #[cfg(feature = "testkit")]
        #[allow(unused_variables, unused_mut, unused_imports, clippy::manual_range_contains)]
        impl $crate::testkit::Random for $name {
            fn random(g: &mut $crate::testkit::Gen, ctx: $crate::wire::Ctx) -> Self {
                use ::std::ops::RangeBounds;
                let mut this = Self::default();
                if !g.enter() {
                    return this;
                }
                $(
                    if ($vers).contains(&ctx.version)
                        && (__kafka_tag!($($tag)?).is_none() || g.chance(2))
                    {
                        this.$field = $crate::testkit::Random::random_field(
                            g,
                            ctx,
                            __kafka_nullable!(ctx.version; $($null)?),
                        );
                    }
                )*
                if ctx.flexible && g.chance(4) {
                    this.unknown_tagged_fields = g.unknown_tagged_fields();
                }
                g.leave();
                this
            }
        }
    };
}
