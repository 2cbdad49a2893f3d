// pgjdbc through the gateway's pooled endpoint: server-side prepared statements from the first use
// (prepareThreshold=1: named statements S_N), on several connections, in and out of transactions.
// Prints one JSON line. Run as a single source file: java -cp postgresql.jar PooledJdbc.java URL USER PASSWORD
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;

public class PooledJdbc {
    public static void main(String[] args) throws Exception {
        List<Connection> connections = new ArrayList<>();
        for (int i = 0; i < 3; i++) connections.add(DriverManager.getConnection(args[0], args[1], args[2]));
        StringBuilder names = new StringBuilder("[");
        for (int round = 0; round < 5; round++) {
            names.append(round == 0 ? "[" : ",[");
            for (int i = 0; i < connections.size(); i++) {
                try (PreparedStatement statement = connections.get(i).prepareStatement("select name from items where id = ?")) {
                    statement.setInt(1, i + round + 1);
                    try (ResultSet rows = statement.executeQuery()) {
                        rows.next();
                        names.append(i == 0 ? "" : ",").append('"').append(rows.getString(1)).append('"');
                    }
                }
            }
            names.append("]");
        }
        names.append("]");
        Connection first = connections.get(0);
        first.setAutoCommit(false);
        long inside;
        try (PreparedStatement statement = first.prepareStatement("select count(*) from items where id <= ?")) {
            statement.setInt(1, 5);
            try (ResultSet rows = statement.executeQuery()) {
                rows.next();
                inside = rows.getLong(1);
            }
        }
        first.commit();
        for (Connection connection : connections) connection.close();
        System.out.println("{\"names\":" + names + ",\"inside\":" + inside + "}");
    }
}
