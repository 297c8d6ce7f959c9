// Prints every configuration key of the Java producer, consumer and admin client as
// `CLIENT KEY`, sorted: the keys kafka-core's configurations must accept (as their own, or as
// a Java key they note and ignore), listed in kafka-core/tests/java_config_keys.txt and
// checked by kafka-core/tests/java_config_keys.rs; scripts/test compares it with the jars in use.
//
//   java -cp "$(scripts/kafka bin)/*" scripts/java/ConfigKeys.java
import java.util.TreeSet;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;

public class ConfigKeys {
    public static void main(String[] args) {
        TreeSet<String> lines = new TreeSet<>();
        for (String k : ProducerConfig.configNames()) lines.add("producer " + k);
        for (String k : ConsumerConfig.configNames()) lines.add("consumer " + k);
        for (String k : AdminClientConfig.configNames()) lines.add("admin " + k);
        lines.forEach(System.out::println);
    }
}
