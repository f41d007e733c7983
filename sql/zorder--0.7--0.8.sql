/* zorder--0.7--0.8.sql: update an installed 0.7 to 0.8 */

\echo Use "ALTER EXTENSION zorder UPDATE TO '0.8'" to load this file. \quit

-- 0.8 adds what a Citus coordinator keeps of each shard's layout, so that
-- a shard moved to another node keeps its layout (shardsets.c), the two
-- functions the coordinator calls on the nodes for it, and the report of
-- each shard's skipping (zorder.shard_clustering_information); and
-- zorder.tables.room_fillfactor, the room zorder carries to the shards
-- Citus makes.  Nothing is
-- dropped, so every privilege a DBA granted or revoked is kept.
-- test/t/015_upgrade.pl checks that the update ends with the objects of a
-- fresh 0.8 install.

-- ==== Citus: each shard's layout, kept on the coordinator (shardsets.c) =====
--
-- On a Citus coordinator, the boundary set each shard of a distributed
-- table was last laid out with, as its node reported it after the call.
-- A shard that a move (citus_move_shard_placement, the rebalancer) took to
-- another node arrives there in its old order but without zorder's rows;
-- the next zorder.optimize gives it this set as a prepared one, and the
-- node recognises the layout in one scan instead of rewriting the shard.
-- Not dumped: shard ids are of this cluster.
CREATE TABLE zorder.shard_sets (
	relid regclass NOT NULL,		-- the distributed table
	shardid bigint NOT NULL,		-- its shard (pg_dist_shard.shardid)
	node_group int NOT NULL,		-- the node group that held it then
	set_id int NOT NULL,			-- the set's id there
	layout_set jsonb NOT NULL,		-- the set, as zorder._shard_layout_set
									-- gives it
	recorded_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (relid, shardid)
);
COMMENT ON TABLE zorder.shard_sets IS
	'on a Citus coordinator, the boundary set of each shard''s last layout';
REVOKE ALL ON zorder.shard_sets FROM PUBLIC;

-- On a node: the boundary set of a shard's layout, for the coordinator to
-- keep (only the room, if it is the set the coordinator knows); and giving
-- a shard that has no layout on this node such a set, as a prepared set
-- that its next zorder.optimize checks the heap against.  The coordinator
-- calls them, as the calling role, who must own the shard.
CREATE FUNCTION zorder._shard_layout_set(rel regclass, known integer DEFAULT NULL)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'zorder_shard_layout_set'
	LANGUAGE C VOLATILE;
CREATE FUNCTION zorder._adopt_layout_set(rel regclass, layout_set jsonb)
	RETURNS boolean
	AS 'MODULE_PATHNAME', 'zorder_adopt_layout_set'
	LANGUAGE C VOLATILE STRICT;
ALTER TABLE zorder.boundary_sets ALTER COLUMN id SET MAXVALUE 1073741823;
-- A distributed table's set has the same id on every node (tableset.c):
-- its coordinator numbers such sets from this sequence, above every id a
-- node gives a set of its own.
CREATE SEQUENCE zorder.table_set_ids AS integer
	MINVALUE 1073741824 MAXVALUE 2147483647;
REVOKE ALL ON SEQUENCE zorder.table_set_ids FROM PUBLIC;
-- A Citus distributed table's one set (tableset.c): each shard's sample
-- for its coordinator, the set stored on each node under the id the
-- coordinator chose, and a call that lays a shard out with it.
CREATE FUNCTION zorder._shard_sample_set(rel regclass, curve text DEFAULT NULL)
	RETURNS jsonb
	AS 'MODULE_PATHNAME', 'zorder_shard_sample_set'
	LANGUAGE C VOLATILE;
CREATE FUNCTION zorder._take_table_set(rel regclass, "table" regclass,
									   set_id integer, layout_set jsonb)
	RETURNS void
	AS 'MODULE_PATHNAME', 'zorder_take_table_set'
	LANGUAGE C VOLATILE;
CREATE PROCEDURE zorder._optimize_with_set(rel regclass, boundary_set integer,
										   "full" boolean DEFAULT false,
										   curve text DEFAULT NULL)
	AS 'MODULE_PATHNAME', 'zorder_optimize_with_set'
	LANGUAGE C;

-- On a Citus coordinator: each shard of a distributed table measured on its
-- node, one row per shard and key column, the shards that skip worst first
-- (shardreport.c).
CREATE FUNCTION zorder.shard_clustering_information(rel regclass,
		probes integer DEFAULT 500,
		with_pages_per_range integer DEFAULT NULL,
		OUT shard text,
		OUT key_position integer,
		OUT column_name name,
		OUT total_ranges bigint,
		OUT mean_ranges_touched float8,
		OUT ideal_ranges_touched float8,
		OUT ratio_to_ideal float8,
		OUT table_pages bigint,
		OUT sorted_runs integer,
		OUT optimized_at timestamptz)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'zorder_shard_clustering_information'
	LANGUAGE C STABLE;
COMMENT ON FUNCTION zorder.shard_clustering_information(regclass, integer, integer) IS
	'on a Citus coordinator, the skipping of each shard of a distributed table, worst first';

-- A set a copy of its table brought from another node (origin 'copy').
ALTER TABLE zorder.boundary_sets DROP CONSTRAINT boundary_sets_origin_check,
	ADD CONSTRAINT boundary_sets_origin_check
		CHECK (origin IN ('optimize', 'prepare', 'copy'));

ALTER TABLE zorder.tables ADD room_fillfactor int
	CHECK (room_fillfactor BETWEEN 10 AND 100);
