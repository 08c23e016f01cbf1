// One JSON object per line on stdout, for the Python side of tests/ecosystem to parse
// (the Java programs here print nothing else on stdout).

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.LinkedHashMap;
import java.util.Map;

final class Emit {
    private static final ObjectMapper JSON = new ObjectMapper();

    private Emit() { }

    /** Prints {"step": step, key: value, ...} from alternating keys and values. */
    static void line(String step, Object... pairs) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("step", step);
        for (int i = 0; i + 1 < pairs.length; i += 2) {
            out.put((String) pairs[i], pairs[i + 1]);
        }
        try {
            System.out.println(JSON.writeValueAsString(out));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The exception's class name, unwrapping an ExecutionException or KafkaException cause. */
    static String error(Throwable t) {
        Throwable cause = t;
        while ((cause instanceof java.util.concurrent.ExecutionException
                || cause instanceof java.util.concurrent.CompletionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getClass().getSimpleName();
    }
}
