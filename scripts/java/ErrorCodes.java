// Prints every error code of the Java client's Errors enum as `CODE NAME RETRIABLE`, where
// RETRIABLE says whether its exception class extends RetriableException: the retriable/fatal
// split kafka-proto's ErrorCode table must match (kafka-proto/tests/java_error_codes.txt,
// checked by kafka-proto/tests/error_codes.rs; scripts/test compares it with the jars in use).
//
//   java -cp "$(scripts/kafka bin)/*" scripts/java/ErrorCodes.java
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.protocol.Errors;

public class ErrorCodes {
    public static void main(String[] args) {
        for (Errors e : Errors.values()) {
            if (e == Errors.NONE) continue;
            System.out.println(e.code() + " " + e.name() + " " + (e.exception() instanceof RetriableException));
        }
    }
}
